/**
 * Tool approvals from chat, end to end with the real Codex CLI (devDependency, 0.169) against the
 * scripted LLM on 127.0.0.1, through the real gateway and a fake Telegram (the real grammy SDK in
 * our adapter): with skipPermissions false engine_d runs `codex app-server`; the model asks for a
 * shell command that writes a file; Codex sends item/commandExecution/requestApproval; the request
 * reaches the chat; `/deny` makes the agent go on without running it (the file does not exist),
 * `/allow` (on the resumed thread) runs it.
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

describe('engine_d (real Codex, app-server): a shell command approved or denied from a Telegram chat', () => {
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
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-e2e-approvals-codex-'));
    dir = path.join(root, 'assistant');
    const home = path.join(root, 'home');
    fs.mkdirSync(dir);
    fs.mkdirSync(home);
    llm = await startFakeLlm();
    tg = await startFakeTelegram();
    const yaml = [
      'name: e2e-approvals-codex',
      'engine: engine_d',
      'skipPermissions: false',
      'timeout: 600',
      'provider:',
      `  baseUrl: ${llm.url}/v1`,
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
        // The real codex first; this Node for the codex launcher; the system for bash.
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
    expect(prompt.text).toContain('wants to use shell');
    expect(prompt.text).toContain(FAKE_ASKING_COMMAND);
    await tg.deliver({ chatType: 'direct', userId: user, text: '/deny' });
    await waitFor('FAKE-LLM-REPLY: ASK-TOOL turn one', 1);
    expect(fs.existsSync(written())).toBe(false);
    // Codex told the model the command was rejected, and did not run it.
    const toolResults = JSON.stringify(llm.requests.at(-1)?.body);
    expect(toolResults).toContain('rejected');
    expect(toolResults).not.toContain('FAKE-TOOL-OUTPUT\\n');
  });

  it('/allow: the command runs and the agent answers after it', async () => {
    await tg.deliver({ chatType: 'direct', userId: user, text: 'ASK-TOOL turn two: please write a file' });
    await waitFor('Approval needed', 2);
    await tg.deliver({ chatType: 'direct', userId: user, text: '/allow' });
    await waitFor('FAKE-LLM-REPLY: ASK-TOOL turn two', 1);
    expect(fs.readFileSync(written(), 'utf8')).toBe('FAKE-TOOL-OUTPUT\n');
    expect(JSON.stringify(llm.requests.at(-1)?.body)).toContain('FAKE-TOOL-OUTPUT');
    // The second turn resumed the first one's thread: the model saw the earlier message.
    expect(replies(tg, user).some((o) => o.text.includes('PREVIOUS-USER-MESSAGE: ASK-TOOL turn one'))).toBe(true);
  });
});
