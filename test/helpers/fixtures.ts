import fs from 'node:fs';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import type { AgentEvent } from '../../src/core/events.js';
import type { LineParser } from '../../src/core/engines/runner.js';
import { repoRoot } from './cli.js';

export interface FixtureMeta {
  exitCode: number | null;
  signal: string | null;
  stderr: string;
  argv: string[];
  /** The capture stopped the run (a CLI that never ends by itself, or a SIGTERM scenario). */
  killedByCapture?: boolean;
}

export const fixtureDir = (engine: string) => path.join(repoRoot, 'test', 'fixtures', engine);

export function readFixture(engine: string, scenario: string): { lines: string[]; meta: FixtureMeta } {
  const base = path.join(fixtureDir(engine), scenario);
  const lines = fs
    .readFileSync(`${base}.ndjson`, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const meta = JSON.parse(fs.readFileSync(`${base}.meta.json`, 'utf8')) as FixtureMeta;
  return { lines, meta };
}

/** Feed a recorded run through a parser as the runner does: every line, then finish(exit) with the ANSI-free stderr tail. */
export function replay(parser: LineParser, engine: string, scenario: string): AgentEvent[] {
  const { lines, meta } = readFixture(engine, scenario);
  const events = lines.flatMap((l) => parser.parseLine(l));
  return [...events, ...parser.finish({ code: meta.exitCode, signal: meta.signal, stderrTail: stripVTControlCharacters(meta.stderr).trim() })];
}

export const texts = (events: AgentEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('');
export const ofType = <T extends AgentEvent['type']>(events: AgentEvent[], type: T) =>
  events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type);
