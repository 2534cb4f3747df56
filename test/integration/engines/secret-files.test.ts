import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFileAtomic, writeFileIfChanged } from '../../../src/core/atomic-write.js';
import { applyConfigPatch } from '../../../src/core/config/patch.js';
import { collect, completionOf, createTestAssistant } from '../../helpers/assistant.js';
import { testdir } from '../../helpers/testdir.js';

/** Issue 12, item 9: every file we write that holds a secret is mode 0600, also when it existed as 0644. */
const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

const MCP_YAML = [
  'mcp:',
  '  files:',
  '    command: node',
  '    args: ["server.js", "--key", "${MCP_ARG_KEY}"]',
  '    env:',
  '      API_TOKEN: ${MCP_ENV_TOKEN}',
  '  remote:',
  '    type: http',
  '    url: http://127.0.0.1:9/mcp?key=${MCP_URL_KEY}',
  '    headers:',
  '      Authorization: Bearer ${MCP_HEADER}',
  '',
].join('\n');
const SECRETS = { MCP_ARG_KEY: 'arg-secret-111111', MCP_ENV_TOKEN: 'env-secret-222222', MCP_URL_KEY: 'url-secret-333333', MCP_HEADER: 'hdr-secret-444444' };

function withSecrets<T>(fn: () => T): T {
  const saved = { ...process.env };
  Object.assign(process.env, SECRETS);
  try {
    return fn();
  } finally {
    for (const k of Object.keys(SECRETS)) if (saved[k] === undefined) delete process.env[k];
  }
}

describe('files that hold secrets are 0600', () => {
  it('the atomic writer applies a requested mode to a file that already exists (0644 → 0600), and sets it exactly', () => {
    const dir = testdir();
    const file = path.join(dir, 'x.json');
    fs.writeFileSync(file, 'old', { mode: 0o644 });
    writeFileAtomic(file, 'new', { mode: 0o600 });
    expect(modeOf(file)).toBe(0o600);
    writeFileAtomic(file, 'newer');
    expect(modeOf(file)).toBe(0o600); // without a mode the file keeps its own
    const same = path.join(dir, 'same.json');
    fs.writeFileSync(same, 'content', { mode: 0o644 });
    expect(writeFileIfChanged(same, 'content', { mode: 0o600 })).toBe(false);
    expect(modeOf(same)).toBe(0o600); // unchanged content, but the mode is still made right
  });

  it('engine_b: .service/engines/engine_b-mcp.json holds resolved MCP secrets and is 0600, also if it was 0644 before', async () => {
    const t = withSecrets(() => createTestAssistant({ engine: 'engine_b', yaml: MCP_YAML }));
    const file = path.join(t.dir, '.service', 'engines', 'engine_b-mcp.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, '{}\n', { mode: 0o644 });
    expect(completionOf(await collect(t.assistant.chat('hi'))).status).toBe('completed');
    expect(fs.readFileSync(file, 'utf8')).toContain(SECRETS.MCP_ENV_TOKEN);
    expect(modeOf(file)).toBe(0o600);
    t.close();
  });

  it("engine_a: .cursor/mcp.json (merged with the user's servers) is 0600", async () => {
    const t = withSecrets(() =>
      createTestAssistant({ engine: 'engine_a', yaml: MCP_YAML, files: { '.cursor/mcp.json': '{"mcpServers":{"mine":{"command":"x"}}}\n' } }),
    );
    expect(completionOf(await collect(t.assistant.chat('hi'))).status).toBe('completed');
    const file = path.join(t.dir, '.cursor', 'mcp.json');
    expect(fs.readFileSync(file, 'utf8')).toContain(SECRETS.MCP_HEADER);
    expect(modeOf(file)).toBe(0o600);
    t.close();
  });

  for (const [engine, rel] of [
    ['engine_e', '.gemini/settings.json'],
    ['engine_f', '.service/engines/engine_f-mcp.json'],
  ] as const) {
    it(`${engine}: ${rel} holds resolved MCP secrets and is 0600`, async () => {
      const t = withSecrets(() => createTestAssistant({ engine, yaml: MCP_YAML }));
      expect(completionOf(await collect(t.assistant.chat('hi'))).status).toBe('completed');
      const file = path.join(t.dir, rel);
      expect(fs.readFileSync(file, 'utf8')).toContain(SECRETS.MCP_HEADER);
      expect(modeOf(file)).toBe(0o600);
      t.close();
    });
  }

  it('service.yaml becomes 0600 when an edit writes a literal secret into it', async () => {
    const t = createTestAssistant();
    const file = path.join(t.dir, 'service.yaml');
    fs.chmodSync(file, 0o644);
    await applyConfigPatch(t.config, { timeout: 100 });
    expect(modeOf(file)).toBe(0o644); // no secret in it: the mode the user chose is kept
    await applyConfigPatch(t.config, { gateway: { token: 'literal-gateway-token-123' } });
    expect(modeOf(file)).toBe(0o600);
    t.close();
  });
});
