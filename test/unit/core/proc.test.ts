import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseProcStat } from '../../../src/core/util/proc.js';

/** A /proc/<pid>/stat line: the fields after the command name, from state (field 3) on, 52 in all. */
function statLine(comm: string, fields: { state?: string; ppid?: number; pgrp?: number; session?: number; start?: string; exitSignal?: string } = {}): string {
  const rest = Array.from({ length: 50 }, () => '0');
  rest[0] = fields.state ?? 'S';
  rest[1] = String(fields.ppid ?? 1);
  rest[2] = String(fields.pgrp ?? 10);
  rest[3] = String(fields.session ?? 10);
  rest[19] = fields.start ?? '123456';
  rest[35] = fields.exitSignal ?? '17';
  return `4242 (${comm}) ${rest.join(' ')}\n`;
}

describe('/proc/<pid>/stat', () => {
  it('reads the fields after the last ")" of the command name, whatever the name holds', () => {
    expect(parseProcStat(4242, statLine('node (worker) x', { ppid: 7, pgrp: 8, session: 9, start: '99887766' }))).toEqual({
      pid: 4242,
      zombie: false,
      ppid: 7,
      pgrp: 8,
      session: 9,
      start: '99887766',
      thread: false,
    });
    expect(parseProcStat(4242, statLine('a) Z 1 2 3', { state: 'Z' }))).toMatchObject({ zombie: true, ppid: 1, pgrp: 10 });
    expect(parseProcStat(4242, statLine('node', { exitSignal: '-1' }))?.thread).toBe(true);
  });

  it('a line cut short is no process', () => {
    expect(parseProcStat(4242, '4242 (node) S 1 10 10 0')).toBeUndefined();
    expect(parseProcStat(4242, '')).toBeUndefined();
  });

  it.runIf(fs.existsSync('/proc/self/stat'))('this process, as the kernel writes it: its parent and a start time', () => {
    const me = parseProcStat(process.pid, fs.readFileSync(`/proc/${process.pid}/stat`, 'utf8'));
    expect(me).toMatchObject({ pid: process.pid, ppid: process.ppid, zombie: false, thread: false });
    expect(me?.start).toMatch(/^\d+$/);
  });
});
