import { formatPreview } from '../core/assistant/activity-records.js';
import type { SendOutcome } from '../core/channel-hub.js';
import { maskSecretValues } from '../core/config/secrets.js';
import type { ConfigSource } from '../core/config/source.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { ActivityStore, DroppedOutboxEntry, OutboxEntry, OutboxKind, ReplyOutboxStore } from '../core/store/types.js';
import { withDeadline } from '../core/util/timeout.js';
import type { RunningAdapters } from './running-adapters.js';
import type { SentLedger } from './sent-ledger.js';
import { splitMessage } from './split.js';
import { ChannelError, type ReplyTarget } from './types.js';

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
export interface ReplyOutboxDeps {
  store: ReplyOutboxStore & Pick<ActivityStore, 'recordActivity'>;
  adapters: RunningAdapters;
  sent: SentLedger;
  config: ConfigSource;
  log: Logger;
  /** This process's identity as the owner of its claims. */
  runId: string;
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
  /** Stop; an attempt under way finishes first. */
  stop(): Promise<void>;
}

const DEFAULT_BACKOFF = [5_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000];
const DEFAULT_CLAIM_MS = 120_000;
/** Rounds are re-planned at least this often (an expiry, a claim of another gateway running out). */
const MAX_SLEEP_MS = 60_000;
const BATCH = 20;
const HOUR = 3_600_000;

/** Refusals a retry cannot cure: the text itself is the problem, or the chat is gone. */
export function isPermanentRefusal(err: unknown): boolean {
  return err instanceof ChannelError && (err.kind === 'format' || err.kind === 'too_long' || err.kind === 'not_found');
}

/** The conversation a reply belongs to: a chat, or a thread of it (JSON: unambiguous, and text PostgreSQL stores). */
export function conversationOf(channel: string, chatId: string, threadId?: string): string {
  return JSON.stringify([channel, chatId, threadId ?? '']);
}

class AttemptCut extends Error {}

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

  /** What did not go out, in the activity log (listed among the escalations), with the whole text. */
  const record = async (e: OutboxEntry, why: string) => {
    const r = {
      ts: new Date(now()).toISOString(),
      source: 'system',
      sender: `${e.channel} outbox`,
      messagePreview: `(a reply to ${e.chatKey})`,
      responsePreview: formatPreview(e.text),
      durationMs: Math.max(0, now() - e.createdAt),
      costUsd: 0,
      status: 'failed' as const,
      sessionKey: e.chatKey,
      error: `${why}${e.lastError ? ` (last error: ${e.lastError})` : ''}. The reply was:\n${e.text}`,
    };
    await deps.store.recordActivity(maskSecretValues(r, deps.config.current().secretValues));
    log.warn(`${e.channel}: a reply to ${e.chatKey} was given up: ${why}`);
  };

  const dropped = (d: DroppedOutboxEntry) =>
    record(
      d,
      d.reason === 'expired'
        ? `not delivered within ${deps.config.current().config.replyRetryHours} h (replyRetryHours), after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`
        : 'a gateway stopped while sending it: it may have arrived, so it is not sent again',
    );

  /** One attempt at one entry; true when it went out. */
  const attempt = async (e: OutboxEntry): Promise<boolean> => {
    const adapter = deps.adapters.get(e.channel);
    let parts: string[] = [e.text];
    let sentParts = 0;
    try {
      if (!adapter) throw new ChannelError(e.channel, 'not_connected', 'the channel is not connected');
      if (e.kind === 'send' && !adapter.send) throw new ChannelError(e.channel, 'not_found', 'the channel cannot send proactive messages');
      parts = splitMessage(e.text, adapter.limit, (md) => adapter.render(md));
      const target = e.kind === 'reply' ? (JSON.parse(e.target) as ReplyTarget) : undefined;
      for (const part of parts) {
        const sending = target ? adapter.reply(target, part) : (adapter.send?.(e.target, part) ?? Promise.resolve(undefined));
        const sent = await withDeadline(sending, claimMs / 2, 'cut').catch((err: unknown) => {
          throw err instanceof Error && err.message === 'cut' ? new AttemptCut() : err;
        });
        sentParts++;
        deps.sent.note(e.channel, sent?.messageId);
      }
      await deps.store.finishOutboxEntry(e.id, deps.runId);
      log.info(`${e.channel}: a kept reply to ${e.chatKey} was delivered (attempt ${e.attempts + 1})`);
      return true;
    } catch (err) {
      if (err instanceof AttemptCut || isPermanentRefusal(err)) {
        await deps.store.finishOutboxEntry(e.id, deps.runId);
        await record(
          e,
          err instanceof AttemptCut
            ? 'the platform did not answer in time: it may have arrived, so it is not sent again'
            : `refused for good: ${errorMessage(err)}`,
        );
        return false;
      }
      const wait = delay(e.attempts + 1, err);
      const rest = sentParts > 0 ? parts.slice(sentParts).join('\n\n') : undefined;
      await deps.store.retryOutboxEntry(e.id, deps.runId, now() + wait, errorMessage(err), rest);
      log.info(`${e.channel}: a kept reply to ${e.chatKey} was refused again (${errorMessage(err)}); next attempt in ${Math.ceil(wait / 1000)} s`);
      return false;
    }
  };

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
    async send(channel, chatId, text) {
      const loaded = deps.config.current();
      const configured = channel in loaded.config.channels || loaded.disabledChannels.some((d) => d.name === channel);
      if (!configured)
        return { ok: false, reason: 'not_found', error: `channel ${channel} is not configured`, availableChannels: Object.keys(loaded.config.channels) };
      const targetKey = conversationOf(channel, chatId);
      const entry = { channel, kind: 'send' as const, target: chatId, targetKey, chatKey: `${channel}:${chatId}` };
      const adapter = deps.adapters.get(channel);
      if (adapter && !adapter.send) return { ok: false, reason: 'unsupported', error: `channel ${channel} cannot send proactive messages` };
      if (!adapter || held.has(targetKey)) {
        const why = adapter ? 'an earlier reply to this chat waits' : `channel ${channel} is not connected`;
        await keep({ ...entry, text }, adapter ? undefined : new ChannelError(channel, 'not_connected', why));
        return { ok: true, queued: why };
      }
      const parts = splitMessage(text, adapter.limit, (md) => adapter.render(md));
      for (const [i, part] of parts.entries()) {
        try {
          deps.sent.note(channel, (await adapter.send?.(chatId, part))?.messageId);
        } catch (err) {
          if (isPermanentRefusal(err)) return { ok: false, reason: 'failed', error: `${channel} refused the message: ${errorMessage(err)}` };
          await keep({ ...entry, text: parts.slice(i).join('\n\n') }, err);
          return { ok: true, queued: `${channel} refused it (${errorMessage(err)})` };
        }
      }
      return { ok: true };
    },
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
      await round;
    },
  };
}
