import { describe, expect, it } from 'vitest';
import { createReplyAdapter } from '../../../src/channels/reply-adapter.js';
import { createRunningAdapters } from '../../../src/channels/running-adapters.js';
import { type ChannelAdapter, ChannelError, type ReplyTarget } from '../../../src/channels/types.js';

/**
 * Issue 30: a reply goes through the channel's adapter running when it is sent
 * (src/channels/reply-adapter.ts). Each adapter here records what went through it and, like a
 * real one after stop() (the lifecycle contract), refuses once it is stopped.
 */
const CHANNEL = 'channel_x';
const to: ReplyTarget = { chatId: 'c1', chatType: 'direct', messageId: 'm1' };

interface Recording extends ChannelAdapter {
  sent: string[];
  stopped: boolean;
}

function recordingAdapter(label: string): Recording {
  const sent: string[] = [];
  const live = (what: string) => {
    if (adapter.stopped) throw new ChannelError(CHANNEL, 'not_connected', `${what}: not connected (the adapter was stopped)`);
  };
  const adapter: Recording = {
    name: CHANNEL,
    limit: { max: 1000, unit: 'chars' },
    sent,
    stopped: false,
    render: (md) => md,
    start: async () => undefined,
    stop: async () => {
      adapter.stopped = true;
    },
    async reply(_to, markdown) {
      live('reply');
      sent.push(`${label} reply: ${markdown}`);
      return { chatId: 'c1', messageId: `${label}-${sent.length}` };
    },
    async typing() {
      if (!adapter.stopped) sent.push(`${label} typing`);
    },
    async openStream() {
      live('openStream');
      const n = sent.filter((s) => s.includes('opened')).length + 1;
      sent.push(`${label} stream ${n} opened`);
      return {
        update: async (md) => {
          live('update');
          sent.push(`${label} stream ${n} update: ${md}`);
        },
        finish: async (md) => {
          live('finish');
          sent.push(`${label} stream ${n} finish: ${md}`);
        },
      };
    },
  };
  return adapter;
}

/** The hub's restart: the old adapter leaves the table and is stopped, a new one connects. */
async function restart(table: ReturnType<typeof createRunningAdapters>, old: Recording, fresh?: Recording): Promise<void> {
  table.remove(CHANNEL, old);
  await old.stop();
  if (fresh) table.set(CHANNEL, fresh);
}

describe('the reply adapter: each call through the adapter running when it is made', () => {
  it('a reply after a restart goes out through the new adapter', async () => {
    const table = createRunningAdapters();
    const a = recordingAdapter('A');
    const b = recordingAdapter('B');
    table.set(CHANNEL, a);
    const out = createReplyAdapter(table, a, 60_000);
    await out.reply(to, 'before');
    await restart(table, a, b);
    await out.reply(to, 'after');
    expect(a.sent).toEqual(['A reply: before']);
    expect(b.sent).toEqual(['B reply: after']);
  });

  it('a reply while no adapter runs waits for the next one; with none within the wait it is refused, naming the channel', async () => {
    const table = createRunningAdapters();
    const a = recordingAdapter('A');
    const b = recordingAdapter('B');
    table.set(CHANNEL, a);
    const out = createReplyAdapter(table, a, 60_000);
    await restart(table, a);
    const waiting = out.reply(to, 'held');
    table.set(CHANNEL, b);
    await waiting;
    expect(b.sent).toEqual(['B reply: held']);

    const brief = createReplyAdapter(table, a, 20);
    await restart(table, b);
    await expect(brief.reply(to, 'lost')).rejects.toMatchObject({ kind: 'not_connected', channel: CHANNEL });
    // "typing…" is best effort: with no adapter running it goes nowhere, and does not wait.
    await brief.typing?.(to);
    expect([...a.sent, ...b.sent].filter((s) => s.includes('typing'))).toEqual([]);
  });

  it('a reply updated in place moves to the new adapter with the text so far; the old one keeps what it showed', async () => {
    const table = createRunningAdapters();
    const a = recordingAdapter('A');
    const b = recordingAdapter('B');
    table.set(CHANNEL, a);
    const out = createReplyAdapter(table, a, 60_000);
    const stream = await out.openStream?.(to);
    await stream?.update('one');
    await restart(table, a, b);
    await stream?.update('one\n\ntwo');
    await stream?.finish('one\n\ntwo\n\nthree');
    expect(a.sent).toEqual(['A stream 1 opened', 'A stream 1 update: one']);
    expect(b.sent).toEqual(['B stream 1 opened', 'B stream 1 update: one\n\ntwo', 'B stream 1 finish: one\n\ntwo\n\nthree']);
  });

  it('capabilities and limits are the channel’s: an adapter without in-place replies gives none', () => {
    const table = createRunningAdapters();
    const { openStream: _none, ...plain } = recordingAdapter('A');
    table.set(CHANNEL, plain);
    const out = createReplyAdapter(table, plain, 60_000);
    expect(out.openStream).toBeUndefined();
    expect(out.askApproval).toBeUndefined();
    expect(out.limit).toEqual({ max: 1000, unit: 'chars' });
    expect(out.name).toBe(CHANNEL);
  });
});
