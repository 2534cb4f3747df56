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
 * What the reply outbox (reply-outbox.ts) does with one entry: an attempt on the adapter running
 * now, and the activity record of a reply that is given up; and a task's answer sent at once, or
 * kept when the platform refuses it.
 */
export interface OutboxAttemptDeps {
  store: ReplyOutboxStore & Pick<ActivityStore, 'recordActivity'>;
  adapters: RunningAdapters;
  sent: SentLedger;
  config: ConfigSource;
  log: Logger;
  /** This process's identity as the owner of its claims. */
  runId: string;
  claimMs: number;
  now: () => number;
  /** The wait before the next attempt, after `attempts` of them (the platform's retry_after in `cause` first). */
  delay(attempts: number, cause: unknown): number;
}

/** Refusals a retry cannot cure: the text itself is the problem, or the chat is gone. */
export function isPermanentRefusal(err: unknown): boolean {
  return err instanceof ChannelError && (err.kind === 'format' || err.kind === 'too_long' || err.kind === 'not_found');
}

/** The conversation a reply belongs to: a chat, or a thread of it (JSON: unambiguous, and text PostgreSQL stores). */
export function conversationOf(channel: string, chatId: string, threadId?: string): string {
  return JSON.stringify([channel, chatId, threadId ?? '']);
}

class AttemptCut extends Error {}

export function createOutboxAttempts(deps: OutboxAttemptDeps): { attempt(e: OutboxEntry): Promise<boolean>; dropped(d: DroppedOutboxEntry): Promise<void> } {
  const { now, log, claimMs, delay } = deps;
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

  return { attempt, dropped };
}

/** What a proactive send needs of the outbox. */
export interface KeepingOutbox {
  config: ConfigSource;
  adapters: RunningAdapters;
  sent: SentLedger;
  holds(targetKey: string): boolean;
  keep(entry: { channel: string; kind: OutboxKind; target: string; targetKey: string; chatKey: string; text: string }, cause?: unknown): Promise<number>;
}

/**
 * A task's answer: sent now, in parts under the platform's limit; what the platform refuses (from
 * the refused part on), or all of it while the channel is not connected or an earlier reply to the
 * chat waits, is kept and sent later (`queued` says why).
 */
export async function sendOrKeep(o: KeepingOutbox, channel: string, chatId: string, text: string): Promise<SendOutcome> {
  const loaded = o.config.current();
  const configured = channel in loaded.config.channels || loaded.disabledChannels.some((d) => d.name === channel);
  if (!configured)
    return { ok: false, reason: 'not_found', error: `channel ${channel} is not configured`, availableChannels: Object.keys(loaded.config.channels) };
  const targetKey = conversationOf(channel, chatId);
  const entry = { channel, kind: 'send' as const, target: chatId, targetKey, chatKey: `${channel}:${chatId}` };
  const adapter = o.adapters.get(channel);
  if (adapter && !adapter.send) return { ok: false, reason: 'unsupported', error: `channel ${channel} cannot send proactive messages` };
  if (!adapter || o.holds(targetKey)) {
    const why = adapter ? 'an earlier reply to this chat waits' : `channel ${channel} is not connected`;
    await o.keep({ ...entry, text }, adapter ? undefined : new ChannelError(channel, 'not_connected', why));
    return { ok: true, queued: why };
  }
  const parts = splitMessage(text, adapter.limit, (md) => adapter.render(md));
  for (const [i, part] of parts.entries()) {
    try {
      o.sent.note(channel, (await adapter.send?.(chatId, part))?.messageId);
    } catch (err) {
      if (isPermanentRefusal(err)) return { ok: false, reason: 'failed', error: `${channel} refused the message: ${errorMessage(err)}` };
      await o.keep({ ...entry, text: parts.slice(i).join('\n\n') }, err);
      return { ok: true, queued: `${channel} refused it (${errorMessage(err)})` };
    }
  }
  return { ok: true };
}
