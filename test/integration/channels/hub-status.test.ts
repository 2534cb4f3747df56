import { afterEach, describe, expect, it } from 'vitest';
import { createChannelHub, type RunningHub } from '../../../src/channels/hub.js';
import { createRunningAdapters } from '../../../src/channels/running-adapters.js';
import { createSentLedger } from '../../../src/channels/sent-ledger.js';
import { createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';

let t: TestAssistant | undefined;
let hub: RunningHub | undefined;
afterEach(async () => {
  await hub?.stop();
  t?.close();
  hub = undefined;
  t = undefined;
});

describe('channel hub statuses', () => {
  it('name each channel’s platform (title), built-in or custom, so the dashboard shows "channel_d · Slack"', async () => {
    t = createTestAssistant({ yaml: 'channels:\n  mybot:\n    _adapter: ./no-such-adapter.mjs\n' });
    hub = createChannelHub({
      dir: t.dir,
      config: t.config,
      log: t.log,
      onMessage: async () => {
        throw new Error('no messages in this test');
      },
      adapters: createRunningAdapters(),
      sent: createSentLedger(),
      backoffMs: [3_600_000],
    });
    hub.start();
    await hub.settled();
    const byType = Object.fromEntries(hub.statuses().map((c) => [c.type, c]));
    expect(Object.fromEntries(Object.entries(byType).map(([k, c]) => [k, c.title]))).toEqual({
      channel_a: 'Feishu / Lark',
      channel_b: 'DingTalk',
      channel_c: 'WeCom AI bot',
      channel_d: 'Slack',
      channel_e: 'Telegram',
      channel_f: 'Discord',
      mybot: 'custom adapter',
    });
    expect(byType.channel_d?.status).toBe('not_configured');
    expect(byType.mybot).toMatchObject({ status: 'failed', reason: expect.stringContaining('no-such-adapter') });
  });
});
