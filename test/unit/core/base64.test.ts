import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBase64, splitDataUrl } from '../../../src/core/util/base64.js';

describe('base64 payloads', () => {
  it('decodes what Buffer encodes, whitespace and line breaks included', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.integer({ min: 1, max: 76 }), (bytes, width) => {
        const text = Buffer.from(bytes).toString('base64');
        const wrapped = text.replace(new RegExp(`(.{${width}})`, 'g'), '$1\n');
        expect(decodeBase64(wrapped)?.equals(Buffer.from(bytes))).toBe(true);
      }),
    );
  });

  it('refuses what is not strict base64, and empty text', () => {
    for (const bad of ['', '   ', 'abc', 'ab$=', 'YQ===', '-_-_', 'YWJj\u0000']) expect(decodeBase64(bad)).toBeUndefined();
  });

  it('takes a data: URL prefix off, and its type only when none was given', () => {
    expect(splitDataUrl('data:image/png;base64,AAAA', undefined)).toEqual({ data: 'AAAA', mimeType: 'image/png' });
    expect(splitDataUrl('data:image/png;base64,AAAA', 'image/gif')).toEqual({ data: 'AAAA', mimeType: 'image/gif' });
    expect(splitDataUrl('AAAA', undefined)).toEqual({ data: 'AAAA', mimeType: undefined });
    const raw = Buffer.from('x');
    expect(splitDataUrl(raw, 'text/plain')).toEqual({ data: raw, mimeType: 'text/plain' });
  });
});
