import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../../helpers/cli.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

const skillMd = (name: string, description = 'Does a useful thing.') => `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name}\n\nSteps.\n`;

describe('service skill (in-process)', () => {
  it('lists, adds and removes skills; invalid folders are reported, not skipped', async () => {
    const dir = testdir({
      'service.yaml': minimalYaml(),
      'skills/alpha/SKILL.md': skillMd('alpha', 'First skill.'),
      'skills/broken/README.md': 'no skill file here',
    });
    const src = testdir({ 'weather/SKILL.md': skillMd('weather', 'Look up the weather.'), 'weather/data.json': '{}' });

    const list = await runCommand(['skill', 'list', '--json', '-d', dir]);
    expect(list.code).toBe(1); // an invalid folder is a problem
    expect(JSON.parse(list.stdout)).toEqual({
      skills: [{ name: 'alpha', description: 'First skill.' }],
      problems: [{ folder: 'broken', problem: 'missing SKILL.md' }],
    });
    fs.rmSync(path.join(dir, 'skills/broken'), { recursive: true });

    const add = await runCommand(['skill', 'add', path.join(src, 'weather'), '-d', dir]);
    expect(add.code).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'skills/weather/data.json'), 'utf8')).toBe('{}');

    const again = await runCommand(['skill', 'add', path.join(src, 'weather'), '-d', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already installed');

    const text = await runCommand(['skill', 'list', '-d', dir]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^alpha\s+First skill\.$/m);
    expect(text.stdout).toMatch(/^weather\s+Look up the weather\.$/m);

    const rm = await runCommand(['skill', 'remove', 'weather', '-d', dir]);
    expect(rm.code).toBe(0);
    expect(fs.existsSync(path.join(dir, 'skills/weather'))).toBe(false);
    const rmMissing = await runCommand(['skill', 'remove', 'weather', '-d', dir]);
    expect(rmMissing.code).toBe(1);
    const escape = await runCommand(['skill', 'remove', '../service.yaml', '-d', dir]);
    expect(escape.code).toBe(2);
    expect(fs.existsSync(path.join(dir, 'service.yaml'))).toBe(true);
  });

  it('refuses to add a folder whose SKILL.md is invalid, saying why', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml() });
    const src = testdir({
      'nofront/SKILL.md': '# no front matter',
      'mismatch/SKILL.md': skillMd('other-name'),
      'nodesc/SKILL.md': '---\nname: nodesc\n---\n',
    });
    const cases: Array<[string, RegExp]> = [
      ['nofront', /must start with YAML front matter/],
      ['mismatch', /does not match the folder name "mismatch"/],
      ['nodesc', /description: required/],
    ];
    for (const [folder, why] of cases) {
      const r = await runCommand(['skill', 'add', path.join(src, folder), '-d', dir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(why);
    }
    expect(fs.existsSync(path.join(dir, 'skills'))).toBe(false);
  });
});
