import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createStampMemo, readStamp } from '../../../src/core/util/file-stamp.js';
import { testdir } from '../../helpers/testdir.js';

describe('stamp memo (work done again only when a file changed)', () => {
  const later = () => Date.now() + 3_600_000; // every stamp settled

  it('gives a value back while the stamp stays the same, not after an edit, a replacement or a chmod', () => {
    const file = path.join(testdir(), 'f.txt');
    fs.writeFileSync(file, 'one');
    const memo = createStampMemo<string>();
    memo.set(file, readStamp(file, later()), 'computed from one');
    expect(memo.get(file, readStamp(file, later()))).toBe('computed from one');

    fs.writeFileSync(file, 'two'); // same size, in place
    expect(memo.get(file, readStamp(file, later()))).toBeUndefined();
    memo.set(file, readStamp(file, later()), 'computed from two');
    fs.chmodSync(file, 0o600);
    expect(memo.get(file, readStamp(file, later()))).toBeUndefined();
    memo.set(file, readStamp(file, later()), 'after chmod');
    fs.writeFileSync(`${file}.new`, 'two');
    fs.renameSync(`${file}.new`, file); // replaced: another inode
    expect(memo.get(file, readStamp(file, later()))).toBeUndefined();
  });

  it('remembers nothing from a stamp that is not settled, or from a missing file', () => {
    const dir = testdir();
    const file = path.join(dir, 'f.txt');
    const memo = createStampMemo<string>();
    memo.set(file, readStamp(file, later()), 'computed while missing');
    expect(memo.get(file, readStamp(file, later()))).toBeUndefined();
    fs.writeFileSync(file, 'x');
    const fresh = readStamp(file); // changed just now: the same stamp could follow another change within the tick
    expect(fresh.settled).toBe(false);
    memo.set(file, fresh, 'racy');
    expect(memo.get(file, readStamp(file, later()))).toBeUndefined();
  });

  it('a folder stamp changes when an entry is added or removed', () => {
    const dir = testdir({ 'skills/a/SKILL.md': 'x' });
    const skills = path.join(dir, 'skills');
    const memo = createStampMemo<string[]>();
    memo.set(skills, readStamp(skills, later()), ['a']);
    expect(memo.get(skills, readStamp(skills, later()))).toEqual(['a']);
    fs.mkdirSync(path.join(skills, 'b'));
    expect(memo.get(skills, readStamp(skills, later()))).toBeUndefined();
    memo.set(skills, readStamp(skills, later()), ['a', 'b']);
    fs.rmdirSync(path.join(skills, 'b'));
    expect(memo.get(skills, readStamp(skills, later()))).toBeUndefined();
  });
});
