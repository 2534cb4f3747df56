import type { Completion, StreamEvent } from '../events.js';
import type { ActivityRecord, HistoryStore, RefusalReason } from '../store/types.js';
import { formatTurnRecord } from './activity-records.js';
import type { BudgetShare } from './turn-budget.js';
import type { TurnReport } from './turn-report.js';
import type { TurnOutcome } from './turn-stream.js';
import { abortMessage } from './turn-stop.js';

/**
 * Step "record" of a turn (turn-pipeline.ts): what a turn leaves once it has ended. Its reply goes
 * into the key's history (unless a reset overtook it), its activity record is written (masked:
 * see the assistant's `record`), and its cost is counted against the budget hold it took, which
 * then goes. A turn refused or stopped before its engine ran is recorded here too.
 */
export interface TurnFacts {
  /** When the message came (ISO 8601). */
  ts: string;
  source: string;
  sender: string;
  /** What the person wrote (or `/name args` of a native command). */
  message: string;
}

export type TurnLog = (key: string, completion: Completion, costUsd: number, refused?: RefusalReason) => Promise<void>;

/** Writes a turn's activity record; `report` ends its log line and live metrics first. */
export function createTurnLog(record: (activity: ActivityRecord) => Promise<void>, facts: TurnFacts, report?: Pick<TurnReport, 'ended'>): TurnLog {
  return (sessionKey, completion, costUsd, refused) => {
    report?.ended({ key: sessionKey, source: facts.source, completion, costUsd });
    return record(formatTurnRecord({ ...facts, sessionKey, completion, costUsd, ...(refused ? { refused } : {}) }));
  };
}

export interface RecordDeps {
  store: Pick<HistoryStore, 'appendHistory'>;
  now: () => number;
}

export async function recordReply(
  deps: RecordDeps,
  turn: { key: string; log: TurnLog; overtaken: () => boolean; hold: BudgetShare | undefined },
  outcome: TurnOutcome,
): Promise<void> {
  const { status, message } = outcome.completion;
  // A failed turn's text is kept too: after a reload the page shows what arrived and how it ended.
  const reply = status === 'failed' ? outcome.shown : outcome.completion.finalText;
  // A reply cut short (aborted, or failed after text) says so in the history too, as it did live.
  const unfinished = status === 'aborted' || status === 'failed' ? { status, ...(message ? { message } : {}) } : {};
  if (reply && !turn.overtaken()) await deps.store.appendHistory({ key: turn.key, role: 'assistant', text: reply, ts: deps.now(), ...unfinished });
  await turn.log(turn.key, outcome.completion, outcome.costUsd);
  // Its cost is counted now (the record above): the hold can go.
  await turn.hold?.settle(outcome.costUsd);
}

/** A turn that never reached the engine (busy, queue full, bad input): error → done → completion failed. */
export function rejectTurn(message: string, emit: (e: StreamEvent) => void): Completion {
  const completion: Completion = { status: 'failed', message };
  emit({ type: 'error', message });
  emit({ type: 'done', durationMs: 0 });
  emit({ type: 'completion', ...completion });
  return completion;
}

/** A turn aborted while it waited (its key's lane, another gateway, the budget): done → completion aborted. */
export function abortBeforeStart(signal: AbortSignal, emit: (e: StreamEvent) => void): Completion {
  const completion: Completion = { status: 'aborted', finalText: '', message: abortMessage(signal, 'Aborted before it started'), durationMs: 0 };
  emit({ type: 'done', durationMs: 0 });
  emit({ type: 'completion', ...completion });
  return completion;
}
