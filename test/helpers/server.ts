import path from 'node:path';
import type { ChannelHub, SendOutcome } from '../../src/core/channel-hub.js';
import { createEmptyHub } from '../../src/core/channel-hub.js';
import { templatesDir } from '../../src/core/paths.js';
import { createTaskControl } from '../../src/core/scheduler/task-control.js';
import { createTaskRunner } from '../../src/core/scheduler/task-runner.js';
import { createServerApp } from '../../src/server/app.js';
import { type ListenOptions, listenApp, type RunningServer } from '../../src/server/listen.js';
import { createTestAssistant, type TestAssistant } from './assistant.js';

export const TEST_TOKEN = 'test-token-0123456789abcdef';

export interface TestServer extends TestAssistant {
  server: RunningServer;
  url: string;
  /** fetch with the bearer token. */
  api(pathname: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  stop(): Promise<void>;
}

export async function startTestServer(
  opts: {
    yaml?: string;
    engine?: string;
    hub?: ChannelHub;
    heartbeatMs?: number;
    maxBodyBytes?: number;
    maxEventSubscribers?: number;
    files?: Record<string, string>;
    fleet?: () => Array<Record<string, unknown>>;
    /** Sees every request first, as the gateway's /health answer does (listen.ts); false passes it on. */
    answerFirst?: ListenOptions['answerFirst'];
  } = {},
): Promise<TestServer> {
  const t = createTestAssistant({
    ...(opts.yaml ? { yaml: opts.yaml } : {}),
    ...(opts.engine ? { engine: opts.engine } : {}),
    ...(opts.files ? { files: opts.files } : {}),
  });
  const channels = opts.hub ?? createEmptyHub(['channel_a', 'channel_b', 'channel_c', 'channel_d', 'channel_e', 'channel_f']);
  // As the gateway wires it: task runs deliver through the same hub the server's /api/send uses.
  const runner = createTaskRunner({ assistant: t.assistant, config: t.config, store: t.store, log: t.log, channels });
  const { app } = createServerApp({
    assistant: t.assistant,
    commands: t.commands,
    config: t.config,
    tasks: createTaskControl({ config: t.config, runner, scheduled: false, log: t.log }),
    channels,
    activity: t.store,
    replies: t.store,
    access: t.access,
    metrics: t.metrics,
    token: TEST_TOKEN,
    log: t.log,
    version: '0.0.0-test',
    dashboardDir: path.join(templatesDir(), 'dashboard'),
    ...(opts.heartbeatMs ? { heartbeatMs: opts.heartbeatMs } : {}),
    ...(opts.maxBodyBytes ? { maxBodyBytes: opts.maxBodyBytes } : {}),
    ...(opts.maxEventSubscribers ? { maxEventSubscribers: opts.maxEventSubscribers } : {}),
    ...(opts.fleet ? { fleet: opts.fleet } : {}),
  });
  const server = await listenApp(app, { host: '127.0.0.1', port: 0, ...(opts.answerFirst ? { answerFirst: opts.answerFirst } : {}) });
  return {
    ...t,
    server,
    url: server.url,
    api(pathname, init = {}) {
      const { json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (!headers.has('authorization')) headers.set('authorization', `Bearer ${TEST_TOKEN}`);
      if (json !== undefined) headers.set('content-type', 'application/json');
      return fetch(`${server.url}${pathname}`, {
        ...rest,
        headers,
        ...(json !== undefined ? { body: JSON.stringify(json), method: rest.method ?? 'POST' } : {}),
      });
    },
    async stop() {
      await t.assistant.drain(0);
      await server.close();
      await t.close();
    },
  };
}

/**
 * Parse an SSE body strictly: every block is either comments only, or exactly one `data: <json>`
 * line (nothing else: no `event:`, no `id:`), and blocks end with a blank line.
 */
export function parseSseStrict(text: string): unknown[] {
  if (text !== '' && !text.endsWith('\n\n')) throw new Error(`stream does not end with a blank line: ${JSON.stringify(text.slice(-40))}`);
  const events: unknown[] = [];
  for (const block of text.split('\n\n').slice(0, -1)) {
    const lines = block.split('\n');
    if (lines.every((l) => l.startsWith(':'))) continue;
    if (lines.length !== 1 || !lines[0]?.startsWith('data: ')) throw new Error(`bad SSE block: ${JSON.stringify(block)}`);
    events.push(JSON.parse(lines[0].slice(6)));
  }
  return events;
}

/** A hub with given channels for /api/send and /api/channels tests. */
export function createRecordingHub(
  channels: Record<string, { canSend: boolean }>,
): ChannelHub & { sent: Array<{ channel: string; chatId: string; text: string }> } {
  const sent: Array<{ channel: string; chatId: string; text: string }> = [];
  const names = Object.keys(channels);
  return {
    sent,
    statuses: () => names.map((type) => ({ type, status: 'connected' as const })),
    list: () => names.map((name) => ({ name, canSend: channels[name]?.canSend ?? false })),
    async send(channel, chatId, text): Promise<SendOutcome> {
      if (names.length === 0) return { ok: false, reason: 'no_channels', error: 'no channel adapters are available' };
      if (!channels[channel]) return { ok: false, reason: 'not_found', error: `channel ${channel} is not available`, availableChannels: names };
      if (!channels[channel]?.canSend) return { ok: false, reason: 'unsupported', error: `channel ${channel} cannot send proactive messages` };
      sent.push({ channel, chatId, text });
      return { ok: true };
    },
  };
}
