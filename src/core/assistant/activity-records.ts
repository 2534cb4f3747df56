import type { ActivityRecord } from '../store/types.js';
import type { Refusal } from './assistant.js';

/** What the activity feed keeps of a message and a reply: one line, at most PREVIEW characters. */
export const PREVIEW = 200;

export function formatPreview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > PREVIEW ? `${flat.slice(0, PREVIEW - 1)}…` : flat;
}

/** The activity record of a message refused before any turn ran (access control). */
export function formatRefusalRecord(r: Refusal, ts: string): ActivityRecord {
  return {
    ts,
    source: r.source,
    sender: r.sender,
    messagePreview: formatPreview(r.message),
    responsePreview: formatPreview(r.reply),
    durationMs: 0,
    costUsd: 0,
    status: 'refused',
    sessionKey: r.sessionKey,
    error: r.detail,
    refused: r.reason,
  };
}
