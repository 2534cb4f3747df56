import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CONFIG_LIMITS, findTooDeep } from '../../../src/core/config/limits.js';
import { ConfigError } from '../../../src/core/errors.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { nestingDepth } from '../../../src/server/body.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/** The ConfigError a service.yaml with `extra` gets when loaded (the file's path, its problems). */
function loadError(extra: string): ConfigError {
  const dir = testdir({ 'service.yaml': minimalYaml('engine_b', extra) });
  try {
    loadServiceConfig(dir, {});
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    expect(err.file).toBe(path.join(fs.realpathSync(dir), 'service.yaml'));
    expect(err.message).toContain(err.file);
    return err;
  }
  throw new Error('expected a ConfigError');
}

const loads = (extra: string) => loadServiceConfig(testdir({ 'service.yaml': minimalYaml('engine_b', extra) }), {});
const yamlList = (key: string, items: string[], indent = '') => `${indent}${key}:\n${items.map((i) => `${indent}  - ${JSON.stringify(i)}\n`).join('')}`;
const tasksYaml = (n: number) => `tasks:\n${Array.from({ length: n }, (_, i) => `  - { id: t${i}, name: T, schedule: "0 9 * * *", prompt: p }\n`).join('')}`;
const mapYaml = (key: string, n: number, value: (i: number) => string, indent = '') =>
  `${indent}${key}:\n${Array.from({ length: n }, (_, i) => `${indent}  k${i}: ${value(i)}\n`).join('')}`;

describe('service.yaml limits at load: each one a problem naming the field and the limit, in an error naming the file', () => {
  it.each([
    [
      'persona.boundaries',
      `persona:\n${yamlList(
        'boundaries',
        Array.from({ length: 101 }, (_, i) => `b${i}`),
        '  ',
      )}`,
      'must be at most 100 items',
    ],
    ['tasks', tasksYaml(1001), 'must be at most 1000 items'],
    ['systemPrompt', `systemPrompt: ${'x'.repeat(100_001)}\n`, 'must be at most 100000 characters'],
    ['tasks[0].prompt', `tasks:\n  - { id: a, name: A, schedule: "0 9 * * *", prompt: ${'p'.repeat(100_001)} }\n`, 'must be at most 100000 characters'],
    [
      'access.allow',
      `access:\n${yamlList(
        'allow',
        Array.from({ length: 10_001 }, (_, i) => `tg:${i}`),
        '  ',
      )}`,
      'must be at most 10000 items',
    ],
    [
      'permissions.allowedPaths',
      `permissions:\n${yamlList(
        'allowedPaths',
        Array.from({ length: 1001 }, (_, i) => `/p${i}`),
        '  ',
      )}`,
      'must be at most 1000 items',
    ],
    ['mcp', mapYaml('mcp', 101, () => '{ command: node }'), 'must have at most 100 servers'],
    ['mcp.files.env', `mcp:\n  files:\n    command: node\n${mapYaml('env', 1001, (i) => `v${i}`, '    ')}`, 'must have at most 1000 variables'],
  ])('%s', (field, extra, message) => {
    expect(loadError(extra).problems).toContain(`${field}: ${message}`);
  });

  it('at each limit the file loads', () => {
    const at = loads(
      [
        `persona:\n${yamlList(
          'boundaries',
          Array.from({ length: 100 }, (_, i) => `b${i}`),
          '  ',
        )}`,
        tasksYaml(1000),
        `systemPrompt: ${'x'.repeat(100_000)}\n`,
        mapYaml('mcp', 100, () => '{ command: node }'),
      ].join(''),
    );
    expect(at.config.persona?.boundaries).toHaveLength(100);
    expect(at.config.tasks).toHaveLength(1000);
    expect(Object.keys(at.config.mcp ?? {})).toHaveLength(100);
  });

  it('a file over 1 MiB is refused before it is parsed, with its size and the limit', () => {
    const err = loadError(`x-notes: ${'n'.repeat(CONFIG_LIMITS.fileBytes)}\n`);
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toMatch(/^\(root\): the file is 1,048,\d{3} bytes; at most 1,048,576 bytes \(1 MiB\)$/);
  });

  it('nesting deeper than 32 levels (only extensions and custom channels can nest) is refused with its path; 32 loads', () => {
    const nested = (levels: number) => `x-deep: ${'{a: '.repeat(levels)}1${'}'.repeat(levels)}\n`;
    expect(loads(nested(31)).raw['x-deep']).toBeDefined(); // the file's mapping, x-deep's and 30 more: 32 levels
    const err = loadError(nested(32));
    expect(err.problems).toEqual([`x-deep${'.a'.repeat(31)}: nested deeper than 32 levels`]);
  });
});

describe('findTooDeep', () => {
  it('counts levels as the request body reader does: a tree is refused exactly when its JSON text is', () => {
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', maxDepth: 40 },
        fc.integer(),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(fc.string({ maxLength: 3 }), tie('node'), { maxKeys: 3 }),
      ),
    })).node;
    fc.assert(
      fc.property(tree, fc.integer({ min: 1, max: 12 }), (value, limit) => {
        expect(findTooDeep(value, limit) !== undefined).toBe(nestingDepth(JSON.stringify(value)) > limit);
      }),
      { numRuns: 500 },
    );
  });
});
