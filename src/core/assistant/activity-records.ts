import type { ActivityRecord } from '../store/types.js';
import type { Refusal } from './assistant.js';
import type { CommandResult } from './slash-commands.js';

/** The activity records of what is not a turn: slash commands and refused messages (pure). */

const PREVIEW = 200;

/** Text on one line, at most 200 characters. */
export function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > PREVIEW ? `${flat.slice(0, PREVIEW - 1)}…` : flat;
}

/** A slash command: `failed` with its answer as the error when it failed, `refused` (admin_only) when not allowed there. */
export function commandRecord(
  line: string,
  result: CommandResult,
  at: { source: string; sender: string; sessionKey: string; started: number; ended: number },
): ActivityRecord {
  const failed = result.error !== undefined;
  const refused = result.error === 'not_allowed_here';
  return {
    ts: new Date(at.started).toISOString(),
    source: at.source,
    sender: at.sender,
    messagePreview: preview(line),
    responsePreview: preview(result.text),
    durationMs: at.ended - at.started,
    costUsd: 0,
    status: refused ? 'refused' : failed ? 'failed' : 'completed',
    sessionKey: at.sessionKey,
    ...(failed ? { error: result.text } : {}),
    ...(refused ? { refused: 'admin_only' as const } : {}),
  };
}

export function refusalRecord(r: Refusal, now: number): ActivityRecord {
  return {
    ts: new Date(now).toISOString(),
    source: r.source,
    sender: r.sender,
    messagePreview: preview(r.message),
    responsePreview: preview(r.reply),
    durationMs: 0,
    costUsd: 0,
    status: 'refused',
    sessionKey: r.sessionKey,
    error: r.detail,
    refused: r.reason,
  };
}
