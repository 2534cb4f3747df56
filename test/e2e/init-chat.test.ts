/**
 * What a user of the new engines does: `service init --engine <id>` in an empty directory, add the
 * model endpoint to service.yaml, then `service chat -m`, with the real CLI (devDependency) against
 * the scripted fake LLM on 127.0.0.1. The built `bin/service.js` is spawned for real, in a fresh
 * HOME with an environment built from scratch. One tool turn per engine.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFakeLlm, type FakeLlm } from '../fakes/fake-llm.js';
import { repoRoot, runCli } from '../helpers/cli.js';

const BIN = path.join(repoRoot, 'node_modules', '.bin');
const TURN_MS = 10 * 60_000;

vi.setConfig({ testTimeout: 2 * TURN_MS, hookTimeout: TURN_MS });

const CASES = [
  { engine: 'engine_e', title: 'Gemini CLI', baseUrl: (l: FakeLlm) => l.url, program: 'Gemini CLI' },
  { engine: 'engine_f', title: 'Qwen Code', baseUrl: (l: FakeLlm) => `${l.url}/v1`, program: 'Qwen Code' },
  // With both on PATH, init picks gemini for acp (the first known ACP agent).
  { engine: 'acp', title: 'ACP agent', baseUrl: (l: FakeLlm) => l.url, program: 'ACP agent: gemini' },
] as const;

let llm: FakeLlm;
let root: string;

beforeAll(async () => {
  llm = await startFakeLlm();
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-e2e-init-'));
});

afterAll(async () => {
  await llm?.close();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe.each(CASES)('service init --engine $engine, then service chat -m (real CLI)', ({ engine, baseUrl, program }) => {
  it('init writes the engine, chat runs a tool turn through the real CLI and prints the reply', async () => {
    const dir = path.join(root, engine);
    const home = path.join(root, `home-${engine}`);
    fs.mkdirSync(home);
    const env = {
      HOME: home,
      PATH: [BIN, path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter),
      NO_PROXY: '127.0.0.1',
      no_proxy: '127.0.0.1',
      LANG: 'C.UTF-8',
    };
    const init = await runCli(['init', dir, '--engine', engine, '--yes', '--name', `e2e-${engine}`], { env, timeoutMs: TURN_MS });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain(`(Customer support, ${program})`);
    const yaml = fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8');
    expect(yaml).toMatch(new RegExp(`^engine: ${engine}$`, 'm'));
    if (engine === 'acp') expect(yaml).toContain('acp:\n  command: gemini\n  args:\n    - --acp');
    fs.appendFileSync(path.join(dir, 'service.yaml'), `provider:\n  baseUrl: ${baseUrl(llm)}\n  apiKey: fake-key\n  model: fake-model\n`);

    const chat = await runCli(['chat', '-d', dir, '-m', `RUN-TOOL hello from ${engine}`], { env, timeoutMs: TURN_MS });
    expect(chat.code, chat.stderr).toBe(0);
    expect(chat.stdout).toContain(`FAKE-LLM-REPLY: RUN-TOOL hello from ${engine}`);
    // The model was asked through the engine, with the shell tool's output fed back.
    expect(llm.requests.some((r) => JSON.stringify(r.body ?? '').includes('FAKE-TOOL-OUTPUT') && JSON.stringify(r.body).includes(`hello from ${engine}`))).toBe(
      true,
    );
  });
});
