import type { Completion } from '../events.js';
import type { ActivityRecord, RefusalReason } from '../store/types.js';
import type { Refusal } from './turn-options.js';
import type { CommandResult } from '../commands/command-table.js';

/** The activity records of turns, slash commands and refused messages (pure). */

/** What the activity feed keeps of a message and a reply: one line, at most PREVIEW characters. */
export const PREVIEW = 200;

export function formatPreview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > PREVIEW ? `${flat.slice(0, PREVIEW - 1)}…` : flat;
}

/** A turn (or one refused before it ran: `refused`), as it ended. */
export function formatTurnRecord(t: {
  ts: string;
  source: string;
  sender: string;
  message: string;
  sessionKey: string;
  completion: Completion;
  costUsd: number;
  refused?: RefusalReason;
}): ActivityRecord {
  const { completion, refused } = t;
  return {
    ts: t.ts,
    source: t.source,
    sender: t.sender,
    messagePreview: formatPreview(t.message),
    responsePreview: formatPreview(completion.finalText ?? completion.message ?? ''),
    durationMs: completion.durationMs ?? 0,
    costUsd: t.costUsd,
    status: refused ? 'refused' : completion.status,
    sessionKey: t.sessionKey,
    ...(completion.status === 'failed' || completion.status === 'aborted' ? { error: completion.message ?? completion.status } : {}),
    ...(refused ? { refused } : {}),
    // The marker opens the answer, which may follow text written before a tool call.
    ...(/(?:^|\n\n)\s*\[ESCALATE\]/.test(completion.finalText ?? '') ? { escalated: true } : {}),
  };
}

/** A slash command: `failed` with its answer as the error when it failed, `refused` (admin_only) when not allowed there. */
export function formatCommandRecord(
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
    messagePreview: formatPreview(line),
    responsePreview: formatPreview(result.text),
    durationMs: at.ended - at.started,
    costUsd: 0,
    status: refused ? 'refused' : failed ? 'failed' : 'completed',
    sessionKey: at.sessionKey,
    ...(failed ? { error: result.text } : {}),
    ...(refused ? { refused: 'admin_only' as const } : {}),
  };
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
