import { formatBudgetRefusal } from '../access/budget.js';
import { type DecodedFile, decodeFiles } from '../files/incoming.js';
import { formatAdmissionRefusal, type Ticket, type TurnQueue } from '../queue/turn-queue.js';
import type { RefusalReason } from '../store/types.js';
import type { ChatSessions } from './chat-sessions.js';
import { type DecodedImage, decodeImages } from './images.js';
import type { TurnBudget } from './turn-budget.js';
import type { ChatOptions } from './turn-options.js';

/**
 * Step "admit" of a turn (turn-pipeline.ts): its input is checked (images, files), its session
 * key resolved (a chat's current named session), the day's budget read, and the queue asked for
 * a place. What it takes: the queue ticket, which also holds the person's slot under
 * maxTurnsPerPerson; the pipeline releases it when the turn ends, whatever ends it.
 */
export interface AdmitDeps {
  queue: TurnQueue;
  budget: TurnBudget;
  sessions: Pick<ChatSessions, 'resolve'>;
  /** Runs admissions in call order per chat (or key), though store reads finish in any order. */
  inOrder: <T>(key: string, step: () => Promise<T>) => Promise<T>;
  /** Idle sessions pruned at start: a turn is admitted only after it. */
  pruning: Promise<unknown>;
}

export interface AdmitRequest {
  opts: ChatOptions;
  source: string;
  /** Who counts against maxTurnsPerPerson (a member in a chat); undefined: nobody (an admin, the owner). */
  person: string | undefined;
  /** Refused before anything (an engine without native commands). */
  refusal?: string;
}

export type Admitted =
  | { ok: true; key: string; ticket: Ticket & Disposable; images: DecodedImage[]; files: DecodedFile[] }
  | { ok: false; key: string; message: string; reason?: RefusalReason };

export async function admitTurn(deps: AdmitDeps, req: AdmitRequest): Promise<Admitted> {
  const { opts } = req;
  let key = opts.sessionKey ?? 'default';
  if (req.refusal) return { ok: false, key, message: req.refusal };
  const images = decodeImages(opts.images);
  if (!images.ok) return { ok: false, key, message: images.message };
  const files = decodeFiles(opts.files);
  if (!files.ok) return { ok: false, key, message: files.message };
  const asked = await deps.inOrder(opts.chatKey ?? key, async () => {
    await deps.pruning;
    if (opts.chatKey !== undefined) key = await deps.sessions.resolve(opts.chatKey);
    const spent = await deps.budget.spentFor(req.source);
    if (spent) return { ok: false as const, key, message: formatBudgetRefusal(spent), reason: 'over_budget' as const };
    // Asked inside the order, answered outside it: a turn waiting for a slot does not hold up the chat's next admission.
    const admission = opts.waitForCapacity ? deps.queue.admitWhenFree(key, opts.signal, req.person) : Promise.resolve(deps.queue.admit(key, req.person));
    return { ok: true as const, admission };
  });
  if (!asked.ok) return asked;
  const admission = await asked.admission;
  if (!admission.ok) return { ok: false, key, message: formatAdmissionRefusal(admission) };
  const { ticket } = admission;
  return { ok: true, key, ticket: { ...ticket, [Symbol.dispose]: () => ticket.release() }, images: images.images, files: files.files };
}
