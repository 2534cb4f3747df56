/**
 * Tool approvals from chat, end to end with the real Claude Code CLI (devDependency) against the
 * scripted LLM on 127.0.0.1, through the real gateway and a fake Telegram (the real grammy SDK in
 * our adapter): the model asks for a Bash call that writes a file; Claude Code asks our
 * permission-prompt MCP helper (--permission-prompt-tool); the request reaches the chat; `/deny`
 * makes the agent go on without running it (the file does not exist), `/allow` runs it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSilentLogger } from '../../src/core/logger.js';
import { type Gateway, startGateway } from '../../src/gateway.js';
import { FAKE_ASKING_COMMAND, startFakeLlm, type FakeLlm } from '../fakes/fake-llm.js';
import { startFakeTelegram } from '../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../fakes/platforms/types.js';
import { repoRoot } from '../helpers/cli.js';
import { replies } from '../helpers/channel-gateway.js';
import { until } from '../helpers/wait.js';

const HANG_MS = 10 * 60_000;
vi.setConfig({ testTimeout: 15 * 60_000, hookTimeout: 15 * 60_000 });

describe('engine_b (real Claude Code): a Bash call approved or denied from a Telegram chat', () => {
  let root: string;
  let dir: string;
  let llm: FakeLlm;
  let tg: FakePlatform;
  let gateway: Gateway;
  const user = '1001';
  const written = () => path.join(dir, 'FAKE-WRITTEN.txt');
  const count = (text: string) => replies(tg, user).filter((o) => o.text.includes(text)).length;
  const waitFor = (text: string, n: number) => until(() => count(text) >= n, HANG_MS, `${n}× "${text}" in the chat`, 50);

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-e2e-approvals-'));
    dir = path.join(root, 'assistant');
    const home = path.join(root, 'home');
    fs.mkdirSync(dir);
    fs.mkdirSync(home);
    llm = await startFakeLlm();
    tg = await startFakeTelegram();
    const yaml = [
      'name: e2e-approvals',
      'engine: engine_b',
      'skipPermissions: false',
      'timeout: 600',
      'provider:',
      `  baseUrl: ${llm.url}`,
      '  apiKey: fake-key',
      '  model: fake-model',
      `channels: ${JSON.stringify({ channel_e: tg.channelConfig })}`,
      'access: { dm: open, groups: open }',
    ].join('\n');
    fs.writeFileSync(path.join(dir, 'service.yaml'), `${yaml}\n`);
    gateway = await startGateway({
      dir,
      port: 0,
      token: 'e2e-token-0123456789',
      log: createSilentLogger(),
      env: {
        HOME: home,
        // The real claude first; this Node for our helper; the system for sh.
        PATH: [path.join(repoRoot, 'node_modules', '.bin'), path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter),
        NO_PROXY: '127.0.0.1',
        no_proxy: '127.0.0.1',
        LANG: 'C.UTF-8',
        SERVICE_FLEET_DIR: path.join(root, 'fleet'),
      },
    });
    await gateway.channels.settled();
    await tg.waitForConnection(HANG_MS);
  });

  afterAll(async () => {
    await gateway?.channels.idle();
    await gateway?.close(0);
    await tg?.close();
    await llm?.close();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('/deny: the agent continues without running the command; the file does not exist', async () => {
    await tg.deliver({ chatType: 'direct', userId: user, text: 'ASK-TOOL turn one: please write a file' });
    await waitFor('Approval needed', 1);
    const prompt = replies(tg, user).find((o) => o.text.includes('Approval needed'))!;
    expect(prompt.text).toContain('Bash');
    expect(prompt.text).toContain(FAKE_ASKING_COMMAND);
    await tg.deliver({ chatType: 'direct', userId: user, text: '/deny' });
    await waitFor('FAKE-LLM-REPLY: ASK-TOOL turn one', 1);
    expect(fs.existsSync(written())).toBe(false);
    // Claude Code told the model why: our message came back as the tool's error result.
    const toolResults = JSON.stringify(llm.requests.at(-1)?.body);
    expect(toolResults).toContain('The person denied this Bash call.');
  });

  it('/allow: the command runs and the agent answers after it', async () => {
    await tg.deliver({ chatType: 'direct', userId: user, text: 'ASK-TOOL turn two: please write a file' });
    await waitFor('Approval needed', 2);
    await tg.deliver({ chatType: 'direct', userId: user, text: '/allow' });
    await waitFor('FAKE-LLM-REPLY: ASK-TOOL turn two', 1);
    expect(fs.readFileSync(written(), 'utf8')).toBe('FAKE-TOOL-OUTPUT\n');
    expect(JSON.stringify(llm.requests.at(-1)?.body)).toContain('FAKE-TOOL-OUTPUT');
  });
});
