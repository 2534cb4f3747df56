import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { engineDefinitions } from '../../src/core/engines/registry.js';
import { repoRoot } from '../helpers/cli.js';

/** docs/engines.md: one section per engine of the registry, each saying the same things, for the version we pin. */
const doc = fs.readFileSync(path.join(repoRoot, 'docs', 'engines.md'), 'utf8');
const pinned = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies;

function section(id: string): { heading: string; body: string } {
  const start = doc.search(new RegExp(`^## .*\\(\`${id}\`\\)$`, 'm'));
  if (start < 0) throw new Error(`docs/engines.md has no section for ${id}`);
  const next = doc.indexOf('\n## ', start + 3);
  const text = doc.slice(start, next < 0 ? undefined : next);
  return { heading: text.split('\n')[0] ?? '', body: text };
}

describe('docs/engines.md', () => {
  it.each(Object.values(engineDefinitions).map((d) => [d.id, d] as const))('%s has its own section', (id, def) => {
    const { heading, body } = section(id);
    if (id === 'acp') return; // the protocol's section: how the client runs a turn, then each agent measured
    expect(heading).toContain(def.title.replace(/ CLI$/, ''));
    // The pinned version of the npm-distributed CLIs is the one described.
    if (def.npmPackage) expect(heading).toContain(pinned[def.npmPackage]);
    for (const topic of [/Started as|Running it headless/, /Keys and base URL/, /resume/i, /Approvals/, /Cannot/])
      expect(body, `${id}: ${topic}`).toMatch(topic);
  });

  it('the warm engines section names every engine, with how it stays resident or that it cannot', () => {
    const start = doc.indexOf('\n## Warm engines\n');
    expect(start).toBeGreaterThan(0);
    const body = doc.slice(start, doc.indexOf('\n## ', start + 3));
    for (const def of Object.values(engineDefinitions)) expect(body, def.id).toContain(`| \`${def.id}\``);
  });

  it('stands on its own: no pointer to notes outside the repository', () => {
    expect(doc).not.toMatch(/\/work\/|shared\/notes/);
  });
});
