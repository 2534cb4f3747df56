import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maskSecretValues, restorePlaceholders } from '../../../src/core/config/secrets.js';
import { nestingDepth } from '../../../src/server/body.js';

const depthOf = (v: unknown): number =>
  Array.isArray(v) ? 1 + Math.max(0, ...v.map(depthOf)) : v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0;

describe('the body depth check', () => {
  it('equals the real nesting of any JSON text, brackets and escapes inside strings included', () => {
    const tricky = fc.constantFrom('[[[', '{{{', '"', '\\', '\\"[', ']]}}', '\\\\');
    const json = fc.jsonValue().chain((v) =>
      fc.oneof(
        fc.constant(v),
        tricky.map((t) => [t, v, { [t]: t }]),
      ),
    );
    fc.assert(fc.property(json, (v) => nestingDepth(JSON.stringify(v)) === depthOf(v)));
  });
});

describe('masking by value', () => {
  it('masks every occurrence in strings and keys, longest secret first, whatever the key', () => {
    const masked = maskSecretValues({ name: 'bot-abcd1234', args: ['--key', 'abcd1234'], abcd1234x: 'x', url: 'h?k=abcd1234ZZZZ' }, [
      'abcd1234',
      'abcd1234ZZZZ',
    ]);
    expect(masked).toEqual({ name: 'bot-********', args: ['--key', '********'], '********x': 'x', url: 'h?k=********' });
  });

  it('leaves short values, numbers and booleans alone', () => {
    expect(maskSecretValues({ a: 'port 3000 on true' }, ['3000', 'true', 'ab'])).toEqual({ a: 'port 3000 on true' });
  });

  it('restorePlaceholders puts the written placeholder back wherever the effective value came from one', () => {
    const raw = { mcp: { x: { args: ['a', '${K}'], url: 'u?k=${U}' } }, port: '${PORT}' };
    const effective = { mcp: { x: { args: ['a', 'secret'], url: 'u?k=secret2', env: {} } }, port: 4123, timeout: 600 };
    expect(restorePlaceholders(effective, raw)).toEqual({ mcp: { x: { args: ['a', '${K}'], url: 'u?k=${U}', env: {} } }, port: '${PORT}', timeout: 600 });
  });
});
