/**
 * The adapter lifecycle contract (src/channels/types.ts, ChannelAdapter) run against all six
 * built-in adapters: each with its real SDK, created through its channel definition, pointed at
 * its fake platform. The same cases for every adapter: start twice (concurrently and one after the
 * other), stop twice, stop before start, start after stop, stop while starting, platform calls
 * before start and after stop, and nothing left open after stop.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatApprovalPrompt } from '../../../src/channels/approval-prompt.js';
import { loadCustomAdapter } from '../../../src/channels/custom.js';
import { channelDefinitions } from '../../../src/channels/registry.js';
import { type ChannelAdapter, ChannelError, type InboundMessage } from '../../../src/channels/types.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { PLATFORMS, type PlatformSpec } from '../../helpers/channel-gateway.js';
import { createRecordingContext, type RecordingContext } from '../../helpers/recording-context.js';
import { cleanupAfterEach, failOnLeaksAfterAll, openHandles } from '../../helpers/resources.js';
import { testdir } from '../../helpers/testdir.js';
import { until } from '../../helpers/wait.js';

const defer = cleanupAfterEach();
failOnLeaksAfterAll();

interface Setup {
  spec: PlatformSpec;
  fake: FakePlatform;
  adapter: ChannelAdapter;
  ctx: RecordingContext;
  /** Stops the adapter, closes the fake, and fails unless no socket or timer is left (vitest keeps none between tests). */
  released(): Promise<void>;
}

async function setup(key: string): Promise<Setup> {
  const spec = PLATFORMS[key]!;
  const fake = await spec.start();
  const def = channelDefinitions[key]!;
  const adapter = await def.create(def.options.parse({ ...fake.channelConfig }), { log: createSilentLogger(), dir: '/tmp', name: key });
  let done = false;
  const released = async () => {
    done = true;
    await adapter.stop();
    await fake.close();
    expect(await openHandles()).toEqual([]);
  };
  // A failing test still stops its adapter before its fake goes.
  defer(async () => {
    if (done) return;
    done = true;
    await adapter.stop();
    await fake.close();
  });
  return { spec, fake, adapter, ctx: createRecordingContext(), released };
}

/** A direct message from the platform side reaches `ctx`, and a reply to it reaches the platform. */
async function expectWorking(s: Setup, text: string): Promise<InboundMessage> {
  // Some fakes count a connection a tick after the SDK's handshake (Lark: its first ping).
  await s.fake.waitForConnection();
  await s.fake.deliver({ chatType: 'direct', userId: s.spec.users[0], text });
  const m = await s.ctx.waitForMessage((x) => x.text === text);
  await s.adapter.reply(m.replyTarget, `re: ${text}`);
  await s.fake.waitForOutbound((o) => o.text.includes(`re: ${text}`));
  return m;
}

function expectChannelError(err: unknown, kind: string, message: RegExp): void {
  expect(err).toBeInstanceOf(ChannelError);
  expect(err).toMatchObject({ kind, message: expect.stringMatching(message) });
}

/** Every platform call the adapter has, made when it must not reach the platform. */
async function expectNotConnected(adapter: ChannelAdapter, m: Pick<InboundMessage, 'chatId' | 'replyTarget'>, why: RegExp): Promise<void> {
  const calls: Array<[string, (() => Promise<unknown>) | undefined]> = [
    ['reply', () => adapter.reply(m.replyTarget, 'too late')],
    ['send', adapter.send && (() => adapter.send!(m.chatId, 'too late'))],
    ['edit', adapter.edit && (() => adapter.edit!({ chatId: m.chatId, messageId: '1' }, 'too late'))],
    ['openStream', adapter.openStream && (() => adapter.openStream!(m.replyTarget))],
    ['readHistory', adapter.readHistory && (() => adapter.readHistory!(m.chatId, { since: new Date(0), limit: 5 }))],
    ['downloadImage', adapter.downloadImage && (() => adapter.downloadImage!({ ref: 'x/y' }))],
    [
      'askApproval',
      adapter.askApproval &&
        (() =>
          adapter.askApproval!(
            m.replyTarget,
            formatApprovalPrompt({ id: 'k7m2x', tool: 'Bash', summary: 'ls', detail: 'ls', cut: false }, { timeoutSeconds: 300 }),
          )),
    ],
  ];
  for (const [what, call] of calls) {
    if (!call) continue;
    const err = await call().then(
      () => new Error(`${what} resolved`),
      (e: unknown) => e,
    );
    expectChannelError(err, 'not_connected', new RegExp(`${what}: not connected \\(${why.source}\\)`));
  }
  // typing is best effort: it neither rejects nor reaches the platform.
  if (adapter.typing) await expect(adapter.typing(m.replyTarget)).resolves.toBeUndefined();
}

const directTarget = (chatId: string) => ({ chatId, replyTarget: { chatId, chatType: 'direct' as const, messageId: 'm-1' } });

describe.each(Object.keys(PLATFORMS))('the %s adapter keeps the lifecycle contract', (key) => {
  it('a second start while the first is connecting is refused; the first connects and works', async () => {
    const s = await setup(key);
    const first = s.adapter.start(s.ctx);
    first.catch(() => undefined); // awaited below; a failed assertion before that must not leave it unhandled
    const other = createRecordingContext();
    const second = await s.adapter.start(other).catch((e: unknown) => e);
    expectChannelError(second, 'lifecycle', /^channel_.: start\(\) called twice: the first start\(\) is still connecting; an adapter is started once/);
    await first;
    await expectWorking(s, 'first start still works');
    expect(other.messages).toEqual([]);
    expect(s.ctx.statuses).toEqual([]);
    await s.released();
  });

  it('a second start after the first connected is refused and leaves the connection untouched', async () => {
    const s = await setup(key);
    await s.adapter.start(s.ctx);
    const other = createRecordingContext();
    const second = await s.adapter.start(other).catch((e: unknown) => e);
    expectChannelError(second, 'lifecycle', /start\(\) called twice: already started; an adapter is started once/);
    await expectWorking(s, 'connection untouched');
    expect(other.messages).toEqual([]);
    expect(s.ctx.statuses).toEqual([]);
    await s.released();
  });

  it('stop twice (together and again later) resolves, reports nothing and leaves nothing open', async () => {
    const s = await setup(key);
    await s.adapter.start(s.ctx);
    await Promise.all([s.adapter.stop(), s.adapter.stop()]);
    await s.adapter.stop();
    expect(s.ctx.statuses).toEqual([]);
    await s.released();
  });

  it('stop before start resolves; the stopped adapter then refuses to start', async () => {
    const s = await setup(key);
    await s.adapter.stop();
    const err = await s.adapter.start(s.ctx).catch((e: unknown) => e);
    expectChannelError(err, 'lifecycle', /start\(\) after stop\(\): an adapter cannot be restarted; create a new one/);
    expect(s.ctx.statuses).toEqual([]);
    await s.released();
  });

  it('start after stop is refused: an adapter is single-use', async () => {
    const s = await setup(key);
    await s.adapter.start(s.ctx);
    await expectWorking(s, 'before the stop');
    await s.adapter.stop();
    const err = await s.adapter.start(s.ctx).catch((e: unknown) => e);
    expectChannelError(err, 'lifecycle', /start\(\) after stop\(\): an adapter cannot be restarted; create a new one/);
    await s.released();
  });

  it('stop while starting ends the pending start with a clear reason and leaves nothing open', async () => {
    const s = await setup(key);
    const starting = s.adapter.start(s.ctx).catch((e: unknown) => e);
    await s.adapter.stop();
    expectChannelError(await starting, 'lifecycle', /stopped while starting/);
    expect(s.ctx.statuses).toEqual([]);
    await s.released();
  });

  it('platform calls before start, while starting and after stop reject as not connected; typing is a no-op', async () => {
    const s = await setup(key);
    const dm = directTarget(s.spec.users[0]);
    await expectNotConnected(s.adapter, dm, /start\(\) has not been called/);
    const starting = s.adapter.start(s.ctx);
    starting.catch(() => undefined); // awaited below
    await expectNotConnected(s.adapter, dm, /start\(\) has not completed/);
    await starting;
    const m = await expectWorking(s, 'answer me later');
    const before = s.fake.outbound.length;
    await s.adapter.stop();
    await expectNotConnected(s.adapter, m, /the adapter was stopped/);
    expect(s.fake.outbound.slice(before)).toEqual([]);
    await s.released();
  });
});

describe('a custom adapter (examples/adapters/folder-adapter.mjs) gets the same contract from its wrapper', () => {
  const example = path.resolve(import.meta.dirname, '../../../examples/adapters/folder-adapter.mjs');

  async function folder() {
    const dir = testdir();
    const adapter = await loadCustomAdapter(example, { inbox: 'in', outbox: 'out', pollMs: 20 }, { log: createSilentLogger(), dir, name: 'folder' });
    defer(() => adapter.stop());
    const outbox = path.join(dir, 'out', 'room.jsonl');
    const written = () => (fs.existsSync(outbox) ? fs.readFileSync(outbox, 'utf8') : '');
    return { dir, adapter, ctx: createRecordingContext(), written };
  }

  it('start twice is refused both ways, and the first start keeps working', async () => {
    const f = await folder();
    const first = f.adapter.start(f.ctx);
    expectChannelError(await f.adapter.start(f.ctx).catch((e: unknown) => e), 'lifecycle', /start\(\) called twice: the first start\(\) is still connecting/);
    await first;
    expectChannelError(await f.adapter.start(f.ctx).catch((e: unknown) => e), 'lifecycle', /start\(\) called twice: already started/);
    fs.writeFileSync(path.join(f.dir, 'in', '1.json'), JSON.stringify({ id: 'm1', chatId: 'room', userId: 'ada', text: 'hello' }));
    const m = await f.ctx.waitForMessage((x) => x.text === 'hello');
    await f.adapter.reply(m.replyTarget, 'hi ada');
    expect(f.written()).toContain('hi ada');
    await f.adapter.stop();
    expect(await openHandles()).toEqual([]);
  });

  it('stop twice, stop before start, start after stop, and platform calls after stop', async () => {
    const idle = await folder();
    await idle.adapter.stop();
    expectChannelError(await idle.adapter.start(idle.ctx).catch((e: unknown) => e), 'lifecycle', /start\(\) after stop\(\)/);

    const f = await folder();
    await expectNotConnected(f.adapter, directTarget('room'), /start\(\) has not been called/);
    await f.adapter.start(f.ctx);
    await f.adapter.send?.('room', 'while started');
    await until(() => f.written().includes('while started'));
    await Promise.all([f.adapter.stop(), f.adapter.stop()]);
    await f.adapter.stop();
    await expectNotConnected(f.adapter, directTarget('room'), /the adapter was stopped/);
    expect(f.written()).not.toContain('too late');
    expectChannelError(await f.adapter.start(f.ctx).catch((e: unknown) => e), 'lifecycle', /start\(\) after stop\(\)/);
    expect(await openHandles()).toEqual([]);
  });

  it('optional capabilities of the module (files, approval buttons) pass through the wrapper, guarded the same way', async () => {
    const dir = testdir();
    const file = path.join(dir, 'buttons-adapter.mjs');
    fs.writeFileSync(
      file,
      [
        'export default () => ({',
        '  asked: [],',
        '  async start() {}, async stop() {},',
        "  async reply() { return { messageId: 'r1' }; },",
        "  async sendFile() { return { messageId: 'f1' }; },",
        "  async askApproval(to, prompt) { this.asked.push(prompt.text); return { messageId: 'a1' }; },",
        '});',
      ].join('\n'),
    );
    const adapter = await loadCustomAdapter(file, {}, { log: createSilentLogger(), dir, name: 'buttons' });
    defer(() => adapter.stop());
    const prompt = { text: 'Approval needed', actions: [] } as unknown as Parameters<NonNullable<typeof adapter.askApproval>>[1];
    expect(typeof adapter.sendFile).toBe('function');
    expect(typeof adapter.askApproval).toBe('function');
    expectChannelError(
      await adapter.askApproval?.(directTarget('room').replyTarget, prompt).catch((e: unknown) => e),
      'not_connected',
      /start\(\) has not been called/,
    );
    await adapter.start(createRecordingContext());
    expect(await adapter.askApproval?.(directTarget('room').replyTarget, prompt)).toEqual({ messageId: 'a1' });
  });
});
