/**
 * A gateway whose engine program is missing says so before the first turn fails: a warning when it
 * starts, `engineWarning` in GET /api/status (the dashboard shows it; test/browser covers that), and
 * the same line as the turn's error. Where the program comes from is said too: a copy this package
 * bundles (a checkout's node_modules/.bin, which only npm scripts put on PATH) is named with the fix.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bundledBinDir } from '../../../src/core/engines/detect.js';
import { repoRoot } from '../../helpers/cli.js';
import { startGatewayProcess } from '../../helpers/gateway-process.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { testdir } from '../../helpers/testdir.js';

const CURSOR_MISSING = "engine_a (Cursor agent CLI): agent / cursor-agent not found on PATH (fix: install it with the vendor's installer)";

let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const status = async (server: TestServer) => (await (await server.api('/api/status')).json()) as Record<string, unknown>;

describe('an engine whose program is missing', () => {
  it('GET /api/status carries engineWarning while the program is missing, and not once it is there; a turn fails with the same line', async () => {
    s = await startTestServer({ engine: 'engine_a' });
    expect(await status(s)).not.toHaveProperty('engineWarning');
    const agent = path.join(s.standIn.binDir, 'agent');
    const saved = fs.readFileSync(agent);
    fs.rmSync(agent);
    expect((await status(s)).engineWarning).toBe(CURSOR_MISSING);
    const turn = await (await s.api('/chat', { json: { message: 'hi' } })).text();
    expect(turn).toContain(JSON.stringify(CURSOR_MISSING).slice(1, -1));
    fs.writeFileSync(agent, saved, { mode: 0o755 });
    expect(await status(s)).not.toHaveProperty('engineWarning');
  });

  it("the copy this package bundles (not on the shell's PATH) is named, with the PATH line and the pinned global install", async () => {
    const version = (
      JSON.parse(fs.readFileSync(path.join(repoRoot, 'node_modules', '@anthropic-ai', 'claude-code', 'package.json'), 'utf8')) as { version: string }
    ).version;
    s = await startTestServer({ engine: 'engine_b' });
    fs.rmSync(path.join(s.standIn.binDir, 'claude'));
    const warning = String((await status(s)).engineWarning);
    expect(bundledBinDir()).toBe(path.join(repoRoot, 'node_modules', '.bin'));
    expect(warning).toBe(
      `engine_b (Claude Code): claude is not on PATH; this package bundles it (${bundledBinDir()}/claude, ${version}), which npm scripts such as \`npm start\` put on PATH and a shell does not` +
        ` (fix: for this shell: export PATH="${bundledBinDir()}:$PATH"; for every shell: npm install -g @anthropic-ai/claude-code@${version})`,
    );
  });

  it('service gateway warns when it starts, and says nothing of a program it finds', async () => {
    const bare = [path.dirname(process.execPath), '/usr/bin', '/bin'].join(path.delimiter);
    const missing = testdir({ 'service.yaml': 'name: no-engine\nengine: cursor\n' });
    const g = await startGatewayProcess(missing, [], { PATH: bare });
    try {
      expect(g.output()).toContain(CURSOR_MISSING);
    } finally {
      await g.stop();
    }
    const bin = testdir({}, 'service-bin-');
    fs.writeFileSync(path.join(bin, 'agent'), '#!/bin/sh\necho 1.0\n', { mode: 0o755 });
    const found = testdir({ 'service.yaml': 'name: with-engine\nengine: engine_a\n' });
    const h = await startGatewayProcess(found, [], { PATH: `${bin}${path.delimiter}${bare}` });
    try {
      expect(h.output()).not.toContain('engine_a (Cursor agent CLI)');
    } finally {
      await h.stop();
    }
  });
});
