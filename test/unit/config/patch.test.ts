import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyConfigPatch, PatchRejected } from '../../../src/core/config/patch.js';
import { MASK } from '../../../src/core/config/secrets.js';
import { type ConfigSource, createConfigSource } from '../../../src/core/config/source.js';
import { mergePatch } from '../../../src/core/config/write-back.js';
import { configChecks, configParts } from '../../../src/definitions.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/**
 * applyConfigPatch against a real config source over a file (the YAML work runs in this thread
 * here, as always from the TypeScript sources: edit-thread.ts; the gateway's worker thread is
 * covered by test/integration/server/config-limits.test.ts).
 */
function source(yaml: string, env: NodeJS.ProcessEnv = {}): { config: ConfigSource; file: string } {
  const dir = testdir({ 'service.yaml': yaml });
  return { config: createConfigSource({ dir, parts: configParts(), checks: configChecks, env }), file: path.join(dir, 'service.yaml') };
}

async function rejection(config: ConfigSource, patch: unknown): Promise<Array<{ path: string; message: string }>> {
  try {
    await applyConfigPatch(config, patch);
  } catch (err) {
    if (err instanceof PatchRejected) return err.issues;
    throw err;
  }
  throw new Error('expected the patch to be rejected');
}

describe('introduced values', () => {
  const env = { TEAM: 'platform', KEY: 'sk-123456' };
  const yaml = minimalYaml('engine_b', 'persona:\n  role: "helps ${TEAM}"\n  boundaries: ["a", "for ${TEAM} only"]\n');

  it('a placeholder a field already holds may be sent back, also by any item of a list that holds it', async () => {
    const { config, file } = source(yaml, env);
    await applyConfigPatch(config, { persona: { role: 'still helps ${TEAM}', boundaries: ['${TEAM} first', 'b', 'for ${TEAM} only'] } });
    expect(fs.readFileSync(file, 'utf8')).toContain('${TEAM} first');
  });

  it('a new placeholder outside the secret fields, and the mask inside a list, are refused with their paths', async () => {
    const { config, file } = source(yaml, env);
    const before = fs.readFileSync(file, 'utf8');
    expect(await rejection(config, { persona: { boundaries: ['${KEY}', MASK] }, model: '${TEAM}' })).toEqual([
      { path: 'persona.boundaries[0]', message: expect.stringContaining('a ${KEY} placeholder can be added through the API only to secret fields') },
      { path: 'persona.boundaries[1]', message: expect.stringContaining(`holds the mask ${MASK}`) },
      { path: 'model', message: expect.stringContaining('a ${TEAM} placeholder') },
    ]);
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    await applyConfigPatch(config, { provider: { apiKey: '${KEY}' } }); // a secret field may take one
    expect(fs.readFileSync(file, 'utf8')).toContain('apiKey: ${KEY}');
  });
});

describe('limits through a PATCH', () => {
  it('a change that would make the file larger than 1 MiB is refused, naming the size and the limit; the file is kept', async () => {
    const { config, file } = source(minimalYaml());
    const before = fs.readFileSync(file, 'utf8');
    const issues = await rejection(config, { 'x-notes': 'n'.repeat(1024 * 1024) });
    expect(issues).toEqual([{ path: '(root)', message: expect.stringMatching(/^the file would be 1,048,\d{3} bytes; at most 1,048,576 bytes \(1 MiB\)$/) }]);
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
  });

  it('a list over its bound is refused with the field and the limit, whatever else the file holds', async () => {
    const { config } = source(minimalYaml('engine_b', 'timeout: 600\n'));
    expect(await rejection(config, { persona: { boundaries: Array.from({ length: 5000 }, (_, i) => `b${i}`) }, timeout: 30 })).toEqual([
      { path: 'persona.boundaries', message: 'must be at most 100 items' },
    ]);
  });
});

describe('merges one at a time, never over another edit', () => {
  it('concurrent PATCHes all land', async () => {
    const { config, file } = source(minimalYaml());
    await Promise.all([
      applyConfigPatch(config, { timeout: 30 }),
      applyConfigPatch(config, { maxConcurrent: 2 }),
      applyConfigPatch(config, { persona: { role: 'r' } }),
    ]);
    const text = fs.readFileSync(file, 'utf8');
    expect(text).toContain('timeout: 30');
    expect(text).toContain('maxConcurrent: 2');
    expect(text).toContain('role: r');
    expect(config.current().config.timeout).toBe(30);
  });

  it('an edit that lands while a PATCH is being written (a slash command) is kept: the PATCH merges into it', async () => {
    const { config, file } = source(minimalYaml());
    const patching = applyConfigPatch(config, { timeout: 30 });
    // The PATCH reads the file at once, then writes its temp file in the thread pool.
    await new Promise((resolve) => setImmediate(resolve));
    config.edit(mergePatch({ model: 'm-1' }, {}));
    await patching;
    const text = fs.readFileSync(file, 'utf8');
    expect(text).toContain('model: m-1');
    expect(text).toContain('timeout: 30');
    expect(config.current().config).toMatchObject({ model: 'm-1', timeout: 30 });
    expect(fs.readdirSync(path.dirname(file)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('a file that keeps changing', () => {
  it('a PATCH that finds service.yaml changed on each of its three tries gives up with config_busy; the other edits are kept', async () => {
    const { config, file } = source(minimalYaml());
    // Another writer that edits the file whenever this PATCH stages its own version.
    let edits = 0;
    const watcher = fs.watch(path.dirname(file), (_event, name) => {
      if (name?.endsWith('.tmp') && fs.readdirSync(path.dirname(file)).includes(name)) fs.appendFileSync(file, `# outside edit ${++edits}\n`);
    });
    try {
      await expect(applyConfigPatch(config, { timeout: 30 })).rejects.toMatchObject({ code: 'config_busy' });
    } finally {
      watcher.close();
    }
    const text = fs.readFileSync(file, 'utf8');
    expect(text).not.toContain('timeout: 30');
    expect(text).toContain('# outside edit 3');
    expect(fs.readdirSync(path.dirname(file)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
