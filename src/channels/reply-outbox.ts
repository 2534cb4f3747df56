import type { SendOutcome } from '../core/channel-hub.js';
import { errorMessage } from '../core/errors.js';
import type { OutboxKind } from '../core/store/types.js';
import { withTimeout } from '../core/util/timeout.js';
import { createOutboxAttempts, type OutboxAttemptDeps, sendOrKeep } from './outbox-delivery.js';
import { ChannelError } from './types.js';

export { conversationOf, isPermanentRefusal } from './outbox-delivery.js';

/**
 * Replies that are never lost. A reply (or a task's answer) that a platform refuses (a network
 * error, a 5xx, a rate limit, an adapter restarting) is kept in the store's outbox and retried
 * with backoff, the platform's `retry_after` first, until it is delivered or `replyRetryHours`
 * pass; then it is recorded in the activity log with its text. The outbox outlives the process
 * and follows the leader: a new gateway (after a crash, or taking over) sends what waits.
 *
 * Each reply goes out once. An entry is claimed before an attempt, with a lease: one that a
 * gateway was sending when it died may have reached the platform, so once its lease has run out
 * it is recorded as "in doubt" and not sent again. A conversation's replies go out in order:
 * while one of its replies waits, its later ones wait behind it.
 */
export interface ReplyOutboxDeps extends Pick<OutboxAttemptDeps, 'store' | 'adapters' | 'sent' | 'config' | 'log' | 'runId'> {
  /** Waits after a refusal, by attempt (the last one repeated); a platform's `retry_after` wins. */
  backoffMs?: readonly number[];
  /** How long a claim lasts (an attempt is cut off before it ends). */
  claimMs?: number;
  now?: () => number;
}

export interface ReplyOutbox {
  /** Keep a reply for later (a refusal, or an earlier reply of the conversation still waits). */
  keep(entry: { channel: string; kind: OutboxKind; target: string; targetKey: string; chatKey: string; text: string }, cause?: unknown): Promise<number>;
  /** Whether replies of this conversation wait in the outbox (new ones go behind them). */
  holds(targetKey: string): boolean;
  /** A proactive send (a task's answer): what the platform refuses, or a channel that is not connected, waits here. */
  send(channel: string, chatId: string, text: string): Promise<SendOutcome>;
  /** Start sending what waits (the gateway leads), and again whenever something is kept. */
  start(): void;
  /** Stop; an attempt under way finishes first (for at most 5 s). */
  stop(): Promise<void>;
}

const DEFAULT_BACKOFF = [5_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000];
const DEFAULT_CLAIM_MS = 120_000;
/** Rounds are re-planned at least this often (an expiry, a claim of another gateway running out). */
const MAX_SLEEP_MS = 60_000;
const BATCH = 20;
const STOP_WAIT_MS = 5_000;
const HOUR = 3_600_000;

export function createReplyOutbox(deps: ReplyOutboxDeps): ReplyOutbox {
  const now = deps.now ?? Date.now;
  const log = deps.log.child('outbox');
  const backoff = deps.backoffMs ?? DEFAULT_BACKOFF;
  const claimMs = deps.claimMs ?? DEFAULT_CLAIM_MS;
  /** Conversations with replies waiting (from the store each round, and those kept since it began). */
  let held = new Set<string>();
  const keptNow = new Set<string>();
  let running = false;
  let stopped = true;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();

  const delay = (attempts: number, cause: unknown) => {
    const asked = cause instanceof ChannelError ? cause.retryAfterMs : undefined;
    return asked !== undefined && asked > 0 ? asked : (backoff[Math.min(attempts, backoff.length - 1)] ?? 60_000);
  };

  /** The next round, at most `ms` from now (a round already due sooner stays). */
  let wakeAt = Number.POSITIVE_INFINITY;
  const schedule = (ms: number) => {
    if (stopped) return;
    const at = Date.now() + Math.max(0, Math.min(ms, MAX_SLEEP_MS));
    if (at >= wakeAt) return;
    clearTimeout(timer);
    wakeAt = at;
    timer = setTimeout(() => {
      wakeAt = Number.POSITIVE_INFINITY;
      void run();
    }, at - Date.now());
    timer.unref();
  };

  const { attempt, dropped } = createOutboxAttempts({ ...deps, log, now, claimMs, delay });

  const runRound = async () => {
    keptNow.clear();
    const at = now();
    for (const d of await deps.store.dropOutboxEntries(at, at - deps.config.current().config.replyRetryHours * HOUR)) await dropped(d);
    const due = await deps.store.claimOutboxEntries(deps.runId, at, at + claimMs, BATCH);
    // Entries of different conversations (only one leads each): side by side.
    const delivered = (await Promise.all(due.map(attempt))).some(Boolean);
    held = new Set([...(await deps.store.outboxTargets()), ...keptNow]);
    const stats = await deps.store.outboxStats();
    if (stats.waiting === 0) return;
    const expiry = (stats.oldestAt ?? at) + deps.config.current().config.replyRetryHours * HOUR;
    // What a delivery let through (the next reply of its conversation) goes at once.
    schedule(delivered ? 0 : Math.min(stats.nextAt ?? expiry, expiry) - now());
  };

  const run = async () => {
    if (stopped) return;
    // A round asked for while one runs comes right after it.
    if (running) return void round.then(() => schedule(0));
    running = true;
    round = runRound()
      .catch((err: unknown) => {
        log.error(`cannot send what waits: ${errorMessage(err)}`);
        schedule(backoff[0] ?? 5_000);
      })
      .finally(() => {
        running = false;
      });
    await round;
  };

  const keep: ReplyOutbox['keep'] = async (entry, cause) => {
    held.add(entry.targetKey);
    keptNow.add(entry.targetKey);
    const at = now();
    const behind = cause === undefined;
    const id = await deps.store.addOutboxEntry({ ...entry, createdAt: at, nextAttemptAt: behind ? at : at + delay(0, cause) });
    if (behind) log.info(`${entry.channel}: a reply to ${entry.chatKey} waits behind an earlier one (outbox #${id})`);
    else
      log.warn(
        `${entry.channel}: a reply to ${entry.chatKey} was refused (${errorMessage(cause)}); kept in the outbox (#${id}), next attempt in ${Math.ceil(delay(0, cause) / 1000)} s`,
      );
    // One behind an earlier reply goes once that one has (the round that delivers it goes on at once).
    if (!behind) schedule(delay(0, cause));
    return id;
  };

  return {
    keep,
    holds: (targetKey) => held.has(targetKey),
    send: (channel, chatId, text) =>
      sendOrKeep({ config: deps.config, adapters: deps.adapters, sent: deps.sent, holds: (k) => held.has(k), keep }, channel, chatId, text),
    start() {
      if (!stopped) return;
      stopped = false;
      void deps.store.outboxTargets().then(
        (keys) => {
          for (const k of keys) held.add(k);
        },
        () => undefined,
      );
      schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      wakeAt = Number.POSITIVE_INFINITY;
      // A platform that does not answer does not hold up a shutdown: its reply stays claimed, and
      // once the claim has run out it is recorded as in doubt (never sent twice).
      await withTimeout(round, STOP_WAIT_MS);
    },
  };
}
