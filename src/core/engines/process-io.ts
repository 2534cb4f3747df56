import { stripVTControlCharacters } from 'node:util';
import type { ProcessIdentity } from '../store/types.js';
import type { ExitInfo } from './runner.js';

/**
 * What both ways of running an engine (runner.ts: one run per turn, or a resident process taking
 * turn after turn) need around the process without touching it: the spawn check, the stderr tail,
 * waiting for a stream's end.
 */
export interface SpawnTarget {
  binary: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** A resident engine process (warm/): started once, then fed turn after turn by its protocol. */
export interface ResidentSpec extends SpawnTarget {
  /** Between SIGTERM and SIGKILL. */
  killGraceMs?: number;
  /** Every process of the tree, at spawn and as snapshots find more (recorded so a restart after a kill can reap them). */
  onProcesses?: (processes: ProcessIdentity[]) => void;
}

/** What the protocol side sees of a resident process: its lines in, a way to write, and its end. */
export interface ResidentHandle {
  readonly pid: number;
  /** Resolves once the root exited, its output was read and what it left running was ended. */
  readonly ended: Promise<ExitInfo>;
  alive(): boolean;
  /** One line to stdin (a newline is added); ignored once the process is gone. */
  send(line: string): void;
  processes(): ProcessIdentity[];
  /** End what a turn's tools left running outside the engine's own process group. */
  endStrays(): Promise<void>;
  /** Stop it (SIGTERM, SIGKILL after the grace, then the tree); resolves when it ended. */
  stop(): Promise<ExitInfo>;
}

export interface ResidentOutput {
  line(line: string): void;
  overflow(chars: number): void;
}

const STDERR_LINES = 20;
const STDERR_BYTES = 8 * 1024;

/**
 * What the OS would refuse to spawn, said without echoing the value (it may be a secret). Config
 * and request validation reject NUL where values enter; this covers values from anywhere else
 * (an engine's own session id, a channel message on an engine that takes the prompt as argv).
 */
export function findUnspawnable(spec: SpawnTarget): string | undefined {
  const at = spec.args.findIndex((a) => a.includes('\0'));
  if (at >= 0) return `argument ${at + 1} contains a NUL byte, which no program can receive`;
  for (const [key, value] of Object.entries(spec.env)) {
    if (key.includes('\0')) return 'an environment variable name contains a NUL byte, which no program can receive';
    if (value?.includes('\0')) return `environment variable ${key} contains a NUL byte, which no program can receive`;
  }
  if (spec.binary.includes('\0') || spec.cwd.includes('\0')) return 'its path contains a NUL byte';
  return undefined;
}

export function waitForEnd(stream: NodeJS.ReadableStream | null | undefined, ms: number): Promise<void> {
  if (!stream || (stream as { readableEnded?: boolean }).readableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    stream.once('end', () => {
      clearTimeout(timer);
      resolve();
    });
    stream.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The last STDERR_LINES lines / STDERR_BYTES bytes of stderr; a flood cannot grow memory. */
export function createTail() {
  let buf = '';
  return {
    push(chunk: string) {
      buf += chunk;
      if (buf.length > STDERR_BYTES * 2) buf = buf.slice(-STDERR_BYTES);
    },
    text() {
      const lines = stripVTControlCharacters(buf).split('\n');
      return lines
        .slice(-STDERR_LINES - 1)
        .join('\n')
        .slice(-STDERR_BYTES)
        .trim();
    },
  };
}
