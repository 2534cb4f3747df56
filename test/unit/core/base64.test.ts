import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { transformSync } from 'esbuild';
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

  it('checks 7 MB of base64 without running out of stack, whatever V8 makes of a pattern', () => {
    // CI once failed a 5 MB image with "Maximum call stack size exceeded" from the check's regular
    // expression; V8 compiles that pattern so whenever its regexp optimizer is off. The module runs
    // in a node started so, on a string of the size a body may hold.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'base64-'));
    try {
      const source = fs.readFileSync(new URL('../../../src/core/util/base64.ts', import.meta.url), 'utf8');
      const script = path.join(dir, 'check.mjs');
      const call = [
        "const big = Buffer.alloc(5 * 1024 * 1024 + 1).toString('base64');",
        "const spaced = `QQ==${' '.repeat(7 * 1024 * 1024)}`;",
        'process.stdout.write(`${decodeBase64(big)?.length} ${decodeBase64(spaced)?.length}`);',
      ].join('\n');
      fs.writeFileSync(script, `${transformSync(source, { loader: 'ts', format: 'esm' }).code}\n${call}\n`);
      expect(execFileSync(process.execPath, ['--no-regexp-optimization', script], { encoding: 'utf8' })).toBe(`${5 * 1024 * 1024 + 1} 1`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes ASCII whitespace anywhere, and nothing after the padding', () => {
    expect(decodeBase64('QU\r\nJD\tR\vA\f= =')?.toString()).toBe('ABCD');
    for (const bad of ['QQ==QUJD', 'Q=Q=', 'QUJD\u00a0', '====']) expect(decodeBase64(bad)).toBeUndefined();
  });
});
