import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatBytes, formatSizeAndLimit, toSafeFileName } from '../../../src/core/files/file-names.js';
import { openOutbox } from '../../../src/core/files/outbox.js';
import { createSentFiles, SENT_FILE_LIMITS } from '../../../src/core/files/sent-files.js';
import { testdir } from '../../helpers/testdir.js';

describe('file names that cross a trust boundary', () => {
  it('keeps ordinary names and makes hostile ones safe', () => {
    expect(toSafeFileName('Quarterly report (final).pdf')).toBe('Quarterly report (final).pdf');
    expect(toSafeFileName('报告.docx')).toBe('报告.docx');
    expect(toSafeFileName('../../etc/passwd')).toBe('passwd');
    expect(toSafeFileName('C:\\Users\\x\\evil.exe')).toBe('evil.exe');
    expect(toSafeFileName('.env')).toBe('env');
    expect(toSafeFileName('..')).toBe('file');
    expect(toSafeFileName('a\nb\u0000c.txt')).toBe('a_b_c.txt');
    expect(toSafeFileName(`${'x'.repeat(300)}.tar.gz`)).toMatch(/^x{117}\.gz$/);
  });

  it('replaces bidirectional controls and other invisible format characters (a right-to-left override would show exe as pdf)', () => {
    expect(toSafeFileName('invoice\u202Efdp.exe')).toBe('invoice_fdp.exe');
    for (const c of [
      '\u202A',
      '\u202B',
      '\u202C',
      '\u202D',
      '\u202E',
      '\u2066',
      '\u2067',
      '\u2068',
      '\u2069',
      '\u200E',
      '\u200F',
      '\u061C',
      '\u200B',
      '\uFEFF',
    ]) {
      expect(toSafeFileName(`a${c}b.txt`)).toBe('a_b.txt');
    }
  });

  it('never yields a path separator, a leading dot, an empty name or more than 120 characters (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (name) => {
        const safe = toSafeFileName(name);
        expect(safe).not.toMatch(/[/\\]/);
        expect(safe.startsWith('.')).toBe(false);
        expect(safe.length).toBeGreaterThan(0);
        expect(safe.length).toBeLessThanOrEqual(120);
        expect(safe).not.toMatch(/[\u0000-\u001f\u202a-\u202e\u2066-\u2069\u200e\u200f]/);
        expect(toSafeFileName(safe)).toBe(safe);
      }),
    );
  });

  it('formats sizes', () => {
    expect([formatBytes(512), formatBytes(12_600), formatBytes(5 * 1024 * 1024)]).toEqual(['512 B', '12.3 KB', '5.0 MB']);
    // One byte over a limit reads as over it, not as "100.0 MB is over 100.0 MB".
    expect(formatSizeAndLimit(100 * 1024 * 1024 + 1, 100 * 1024 * 1024)).toEqual({ size: '104857601 bytes', limit: '104857600 bytes' });
    expect(formatSizeAndLimit(200 * 1024 * 1024, 100 * 1024 * 1024)).toEqual({ size: '200.0 MB', limit: '100.0 MB' });
  });
});

describe('kept files (what the agent sent)', () => {
  const setup = () => {
    const root = testdir();
    let now = 1_700_000_000_000;
    const files = createSentFiles({ dir: path.join(root, 'files'), now: () => now });
    const outbox = openOutbox(path.join(root, 'outbox'));
    return { root, files, outbox, advance: (ms: number) => (now += ms) };
  };

  it('are opened by id and exact name until the keep time is over, then pruned', () => {
    const { files, outbox, advance } = setup();
    fs.writeFileSync(path.join(outbox.dir, 'a.txt'), 'abc');
    const [kept] = files.keep(outbox.collect());
    const id = kept?.id ?? '';
    const opened = files.open(id, 'a.txt');
    expect(opened).toMatchObject({ name: 'a.txt', size: 3, mimeType: 'text/plain' });
    if (opened) fs.closeSync(opened.fd);
    expect(files.open(id, 'b.txt')).toBeUndefined();
    expect(files.open('../../etc', 'passwd')).toBeUndefined();
    expect(files.open(id, '../a.txt')).toBeUndefined();
    advance(SENT_FILE_LIMITS.keepMs + 1);
    expect(files.open(id, 'a.txt')).toBeUndefined();
    expect(files.prune()).toBe(1);
    expect(fs.readdirSync(files.dir)).toEqual([]);
  });

  it('a kept file replaced by a link is never opened', () => {
    const { root, files, outbox } = setup();
    fs.writeFileSync(path.join(outbox.dir, 'a.txt'), 'abc');
    const [kept] = files.keep(outbox.collect());
    fs.writeFileSync(path.join(root, 'secret'), 'secret');
    fs.rmSync(kept?.path ?? '');
    fs.symlinkSync(path.join(root, 'secret'), kept?.path ?? '');
    expect(files.open(kept?.id ?? '', 'a.txt')).toBeUndefined();
  });
});

describe('the turn outbox', () => {
  it('is a fresh folder per turn (its root made when missing), removed with what is left in it', () => {
    const root = path.join(testdir(), 'outbox');
    const first = openOutbox(root); // the root does not exist yet
    const second = openOutbox(root);
    expect(first.dir).not.toBe(second.dir);
    expect(fs.readdirSync(root).sort()).toEqual([path.basename(first.dir), path.basename(second.dir)].sort());
    // The folder name starts with its creation time (base 36): removeStaleOutboxes relies on it.
    expect(Number.parseInt(path.basename(first.dir).split('-')[0] ?? '', 36)).toBeGreaterThan(Date.now() - 60_000);
    first.remove(); // empty
    fs.mkdirSync(path.join(second.dir, 'sub'));
    fs.writeFileSync(path.join(second.dir, 'sub', 'a.txt'), 'a');
    fs.writeFileSync(path.join(second.dir, 'b.txt'), 'b');
    second.remove(); // not empty
    second.remove(); // already gone: nothing to do
    expect(fs.readdirSync(root)).toEqual([]);
    fs.rmSync(root, { recursive: true });
    const third = openOutbox(root); // the root was removed meanwhile
    expect(fs.statSync(third.dir).isDirectory()).toBe(true);
  });
});
