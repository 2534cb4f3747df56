import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngineRunner } from '../../../src/core/engines/engine-runner.js';
import { createMemoryFailoverStore } from '../../../src/core/engines/failover.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { resolveAssistantPaths } from '../../../src/core/paths.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { testdir } from '../../helpers/testdir.js';

const skill = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\nBody\n`;

/**
 * The runner prepares the workspace before every turn, parsing a SKILL.md again only when its
 * stamp (inode, size, times) changed. These changes between two turns must all reach the context
 * file, also once the files are settled (older than the timestamp granularity: the clock here runs
 * an hour ahead, so every stamp is settled and cached results are reused).
 */
describe('the workspace between turns', () => {
  it('follows a SKILL.md edited in place (same size), a skill added and one removed', () => {
    const dir = testdir({ 'service.yaml': 'name: ws\nengine: engine_b\n', 'skills/alpha/SKILL.md': skill('alpha', 'First version AAA') });
    const paths = resolveAssistantPaths(dir);
    const runner = createEngineRunner({
      dir: paths.dir,
      stateDir: paths.stateDir,
      skillsDir: paths.skillsDir,
      log: createSilentLogger(),
      failover: createMemoryFailoverStore(),
      now: () => Date.now() + 3_600_000,
    });
    const config = loadServiceConfig(dir).config;
    const context = () => fs.readFileSync(path.join(dir, 'CLAUDE.md'), 'utf8');

    runner.prepare(config);
    expect(context()).toContain('First version AAA');
    runner.prepare(config); // from the cache
    expect(context()).toContain('First version AAA');

    fs.writeFileSync(path.join(dir, 'skills/alpha/SKILL.md'), skill('alpha', 'Other version BBB'));
    expect(runner.prepare(config).map((s) => s.description)).toEqual(['Other version BBB']);
    expect(context()).toContain('Other version BBB');

    fs.mkdirSync(path.join(dir, 'skills/beta'));
    fs.writeFileSync(path.join(dir, 'skills/beta/SKILL.md'), skill('beta', 'Second skill'));
    expect(runner.prepare(config).map((s) => s.name)).toEqual(['alpha', 'beta']);
    expect(fs.readlinkSync(path.join(dir, '.claude/skills/beta'))).toBe('../../skills/beta');

    fs.rmSync(path.join(dir, 'skills/alpha'), { recursive: true });
    expect(runner.prepare(config).map((s) => s.name)).toEqual(['beta']);
    expect(context()).not.toContain('alpha');
    expect(fs.existsSync(path.join(dir, '.claude/skills/alpha'))).toBe(false);

    // A folder that becomes valid is picked up too (its problem was cached as well).
    fs.mkdirSync(path.join(dir, 'skills/gamma'));
    expect(runner.prepare(config).map((s) => s.name)).toEqual(['beta']);
    fs.writeFileSync(path.join(dir, 'skills/gamma/SKILL.md'), skill('gamma', 'Third skill'));
    expect(runner.prepare(config).map((s) => s.name)).toEqual(['beta', 'gamma']);
  });
});
