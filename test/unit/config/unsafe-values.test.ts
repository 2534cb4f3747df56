import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/core/errors.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/**
 * Issue 12, items 1 and 5, at the config's door: a NUL can never reach an engine's argv or env,
 * and `__proto__` / `constructor` / `prototype` are never keys of ours, so service.yaml holding
 * either is rejected on load, each problem with its YAML path.
 */
const problemsOf = (yaml: string): string[] => {
  const dir = testdir({ 'service.yaml': yaml });
  try {
    loadServiceConfig(dir, {});
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('values that can never be valid are rejected where they enter', () => {
  it('a NUL in any string, at any depth, is a problem naming its path (not its value)', () => {
    const problems = problemsOf(
      minimalYaml(
        'engine_b',
        'model: "x\\0y"\nmcp:\n  files:\n    command: node\n    args: ["--root", "/tmp\\0/etc"]\n    env:\n      API_TOKEN: "sk-\\0secret"\n',
      ),
    );
    expect(problems).toEqual([
      'mcp.files.args[1]: must not contain a NUL character (U+0000): no program can receive it',
      'mcp.files.env.API_TOKEN: must not contain a NUL character (U+0000): no program can receive it',
      'model: must not contain a NUL character (U+0000): no program can receive it',
    ]);
    expect(problems.join('\n')).not.toContain('secret');
  });

  it('a NUL in a key is a problem too', () => {
    expect(problemsOf(minimalYaml('engine_b', 'mcp:\n  files:\n    command: node\n    env:\n      "A\\0B": "1"\n'))).toContain(
      'mcp.files.env: key "A\\u0000B" must not contain a NUL character (U+0000): no program can receive it',
    );
  });

  it('__proto__, constructor and prototype are rejected as keys anywhere', () => {
    const problems = problemsOf(
      minimalYaml('engine_b', 'channels:\n  __proto__:\n    token: x\nmcp:\n  constructor:\n    command: node\nx-ext:\n  prototype: 1\n'),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'channels: "__proto__" is not allowed as a key',
        'mcp: "constructor" is not allowed as a key',
        'x-ext: "prototype" is not allowed as a key',
      ]),
    );
  });

  it('a clean file still loads', () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'mcp:\n  files:\n    command: node\n    args: ["--root", "/tmp"]\n') });
    expect(loadServiceConfig(dir, {}).config.mcp?.files).toBeDefined();
    expect(fs.existsSync(path.join(dir, 'service.yaml'))).toBe(true);
  });
});
