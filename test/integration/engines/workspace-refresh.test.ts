import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
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
    const runner = createRunner(paths, () => Date.now() + 3_600_000);
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
    // And one whose SKILL.md goes away again is dropped (nothing is remembered from a missing file).
    fs.rmSync(path.join(dir, 'skills/gamma/SKILL.md'));
    expect(runner.prepare(config).map((s) => s.name)).toEqual(['beta']);
  });

  /**
   * The files the runner writes (context file, skill links, MCP config) are checked by their
   * stamps: once settled (a second after their last change: the test moves Date on for that),
   * an unchanged stamp means nothing to do. Each change between two turns must still be undone or
   * followed at the next one.
   */
  it('restores what was changed between two turns once its stamps were settled: links, context file, MCP config; follows new skills', () => {
    const dir = testdir({
      // Approvals on: the runner writes an MCP config (the permission-prompt helper).
      'service.yaml': 'name: ws\nengine: engine_b\nskipPermissions: false\n',
      'CLAUDE.md': 'Notes of the user.\n',
      'skills/alpha/SKILL.md': skill('alpha', 'First skill'),
    });
    const paths = resolveAssistantPaths(dir);
    const runner = createRunner(paths);
    const config = loadServiceConfig(dir).config;
    const claudeMd = path.join(dir, 'CLAUDE.md');
    const links = path.join(dir, '.claude/skills');
    const mcp = path.join(paths.stateDir, 'engines/engine_b-mcp.json');
    // A second and a bit later on the stamps' clock (Date alone is moved: the files keep their real times).
    const settle = () => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 1_100 });
      try {
        runner.prepare(config); // remembers the settled stamps
        runner.prepare(config); // from what it remembered
      } finally {
        vi.useRealTimers();
      }
    };

    runner.prepare(config);
    const generated = fs.readFileSync(claudeMd, 'utf8');
    const mcpText = fs.readFileSync(mcp, 'utf8');
    settle();
    expect(fs.readFileSync(claudeMd, 'utf8')).toBe(generated);

    // A skill added between two turns is seen and linked at the second.
    fs.mkdirSync(path.join(dir, 'skills/beta'));
    fs.writeFileSync(path.join(dir, 'skills/beta/SKILL.md'), skill('beta', 'Second skill'));
    expect(runner.prepare(config).map((s) => s.name)).toEqual(['alpha', 'beta']);
    expect(fs.readlinkSync(path.join(links, 'beta'))).toBe('../../skills/beta');
    expect(fs.readFileSync(claudeMd, 'utf8')).toContain('Second skill');
    settle();

    // A link removed by hand comes back; one pointing at a skill no longer there goes.
    fs.rmSync(path.join(links, 'alpha'));
    runner.prepare(config);
    expect(fs.readlinkSync(path.join(links, 'alpha'))).toBe('../../skills/alpha');
    settle();
    fs.rmSync(path.join(dir, 'skills/beta'), { recursive: true });
    expect(runner.prepare(config).map((s) => s.name)).toEqual(['alpha']);
    expect(fs.existsSync(path.join(links, 'beta'))).toBe(false);
    expect(fs.lstatSync(path.join(links, 'beta'), { throwIfNoEntry: false })).toBeUndefined();
    settle();

    // The generated section edited by hand is regenerated, the user's text around it kept; a deleted file is written again.
    const withSection = fs.readFileSync(claudeMd, 'utf8');
    fs.writeFileSync(claudeMd, `${withSection.replace('First skill', 'Edited by hand')}More notes.\n`);
    runner.prepare(config);
    const edited = fs.readFileSync(claudeMd, 'utf8');
    expect(edited).toContain('First skill');
    expect(edited).not.toContain('Edited by hand');
    expect(edited).toMatch(/^Notes of the user\.\n[\s\S]*More notes\.\n$/);
    settle();
    fs.rmSync(claudeMd);
    runner.prepare(config);
    expect(fs.readFileSync(claudeMd, 'utf8')).toContain('First skill');

    // The MCP config: edited, loosened to 0644 or deleted, it is written again (0600).
    settle();
    fs.writeFileSync(mcp, '{}\n');
    runner.prepare(config);
    expect(fs.readFileSync(mcp, 'utf8')).toBe(mcpText);
    settle();
    fs.chmodSync(mcp, 0o644);
    runner.prepare(config);
    expect(fs.statSync(mcp).mode & 0o777).toBe(0o600);
    settle();
    fs.rmSync(mcp);
    runner.prepare(config);
    expect(fs.readFileSync(mcp, 'utf8')).toBe(mcpText);
  });
});

/** The engine runner of an assistant folder, quiet, with its own failover memory. */
function createRunner(paths: ReturnType<typeof resolveAssistantPaths>, now?: () => number) {
  return createEngineRunner({
    dir: paths.dir,
    stateDir: paths.stateDir,
    skillsDir: paths.skillsDir,
    log: createSilentLogger(),
    failover: createMemoryFailoverStore(),
    ...(now ? { now } : {}),
  });
}
