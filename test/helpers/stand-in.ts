import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './cli.js';
import { testdir } from './testdir.js';

export const standInScript = path.join(repoRoot, 'test', 'fakes', 'stand-in-engine.mjs');
/** The stand-in ACP agent, on the stand-ins' PATH as `acp-agent` (`acp: {command: acp-agent}`). */
export const acpAgentScript = path.join(repoRoot, 'test', 'fakes', 'acp-agent.mjs');

const BINARIES: Record<string, string[]> = {
  engine_a: ['agent'],
  engine_b: ['claude'],
  engine_c: ['opencode'],
  engine_d: ['codex'],
  engine_e: ['gemini'],
  engine_f: ['qwen'],
};

export interface StandIn {
  binDir: string;
  /** PATH with the stand-ins first and without node_modules/.bin (the real CLIs). */
  PATH: string;
  logFile: string;
  stateDir: string;
  /** Environment for a process that should use the stand-ins. */
  env: NodeJS.ProcessEnv;
  runs(): Array<Record<string, unknown>>;
}

/**
 * A bin directory whose claude/opencode/codex/agent/gemini/qwen are the stand-in engine, and
 * acp-agent the stand-in ACP agent. It lives in a testdir (removed after the current test) unless
 * `root` is given (a suite-wide gateway).
 */
export function createStandIn(root = testdir({}, 'service-standin-')): StandIn {
  const binDir = path.join(root, 'bin');
  fs.mkdirSync(binDir, { recursive: true });
  for (const [engine, names] of Object.entries(BINARIES)) {
    for (const name of names) {
      fs.writeFileSync(path.join(binDir, name), `#!/bin/sh\nexec "${process.execPath}" "${standInScript}" ${engine} "$@"\n`, { mode: 0o755 });
    }
  }
  fs.writeFileSync(path.join(binDir, 'acp-agent'), `#!/bin/sh\nexec "${process.execPath}" "${acpAgentScript}" "$@"\n`, { mode: 0o755 });
  const logFile = path.join(root, 'runs.ndjson');
  const stateDir = path.join(root, 'state');
  const PATH = [binDir, ...(process.env.PATH ?? '').split(path.delimiter).filter((p) => !p.includes('node_modules'))].join(path.delimiter);
  return {
    binDir,
    PATH,
    logFile,
    stateDir,
    env: { PATH, STANDIN_LOG: logFile, STANDIN_STATE_DIR: stateDir },
    runs: () =>
      fs.existsSync(logFile)
        ? fs
            .readFileSync(logFile, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as Record<string, unknown>)
        : [],
  };
}

/** True while a process with this pid exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
