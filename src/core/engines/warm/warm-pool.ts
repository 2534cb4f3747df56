import type { Logger } from '../../logger.js';
import { type Clock, systemClock } from '../../util/clock.js';
import type { ProcessIdentity } from '../../store/types.js';
import type { ExitInfo } from '../runner.js';
import type { ResidentProcess } from './resident-process.js';

/**
 * The warm engine processes of one assistant: at most one per conversation (session key), at most
 * `maxProcesses` in all. A conversation's process is handed its next turn only when it was
 * started the same way (engine, model, provider, skills, context, permissions, MCP: its
 * fingerprint) and holds the conversation's engine session; otherwise it is retired and the turn
 * starts another. An idle process ends after `idleSeconds`; when a new one needs room, the least
 * recently used idle one goes first; when every one is busy, the turn runs per turn.
 */
export interface WarmSettings {
  enabled: boolean;
  maxProcesses: number;
  idleSeconds: number;
}

export interface WarmEntry {
  readonly key: string;
  readonly engine: string;
  readonly fingerprint: string;
  readonly process: ResidentProcess;
  readonly startedAt: number;
  /** The engine session the process holds (known after its first turn). */
  sessionId: string | undefined;
  busy: boolean;
  lastUsed: number;
  turns: number;
  /** Set when the process must not take another turn (config changed meanwhile): retired once its turn ends. */
  retiring: string | undefined;
  /** Let go of what the process had beside itself (its record, its approval endpoint, its outbox). */
  release(): void;
}

export interface WarmProcessInfo {
  pid: number;
  engine: string;
  sessionKey: string;
  busy: boolean;
  turns: number;
  startedAt: number;
  lastUsedAt: number;
}

export interface WarmPool {
  settings(): WarmSettings;
  /** The conversation's process if it fits this turn (and marks it busy); a misfit is retired. */
  checkout(key: string, fingerprint: string, sessionId: string | undefined): WarmEntry | undefined;
  /** Whether a new process may start now (an idle one may be ended for it); false: every slot is busy. */
  makeRoom(key: string): boolean;
  /** A process just started for `key`, busy with its first turn. */
  add(entry: WarmEntry): void;
  /** Its turn is over: idle from now on (or retired, when it cannot go on). */
  checkin(entry: WarmEntry): void;
  retire(entry: WarmEntry, why: string): void;
  /** Retire every process `pred` picks: at once when idle, after its turn when busy. */
  retireWhere(pred: (entry: WarmEntry) => boolean, why: string): void;
  /** Idle processes past `maxProcesses` (it was lowered) are ended, least recently used first. */
  trim(): void;
  /** End every process (shutdown); resolves when they have ended. */
  stopAll(): Promise<void>;
  list(): WarmProcessInfo[];
  /** Every process of the conversation's warm process tree (for its memory). */
  processesOf(key: string): ProcessIdentity[];
}

export interface WarmPoolDeps {
  settings: () => WarmSettings;
  log: Logger;
  clock?: Clock;
  /** A process ended without being stopped (its exit, whether or not a turn was running). */
  endedByItself?: (entry: WarmEntry, exit: ExitInfo) => void;
}

export function createWarmPool(deps: WarmPoolDeps): WarmPool {
  const clock = deps.clock ?? systemClock;
  const entries = new Map<string, WarmEntry>();
  const idleTimers = new Map<WarmEntry, { clear(): void }>();
  /** Processes being stopped, so a shutdown waits for them too. */
  const ending = new Set<Promise<unknown>>();

  const clearIdle = (entry: WarmEntry) => {
    idleTimers.get(entry)?.clear();
    idleTimers.delete(entry);
  };
  const retire = (entry: WarmEntry, why: string) => {
    clearIdle(entry);
    if (entries.get(entry.key) === entry) entries.delete(entry.key);
    deps.log.debug(`warm ${entry.engine} process ${entry.process.pid} for "${entry.key}" ends: ${why}`);
    const stopped = entry.process
      .stop()
      .catch(() => undefined)
      .finally(() => {
        entry.release();
        ending.delete(stopped);
      });
    ending.add(stopped);
  };
  const armIdle = (entry: WarmEntry) => {
    clearIdle(entry);
    const ms = Math.max(0, deps.settings().idleSeconds * 1000);
    idleTimers.set(
      entry,
      clock.setTimer(() => {
        if (!entry.busy) retire(entry, `idle for ${deps.settings().idleSeconds} s`);
      }, ms),
    );
  };
  const leastRecentlyUsedIdle = () => [...entries.values()].filter((e) => !e.busy).sort((a, b) => a.lastUsed - b.lastUsed)[0];

  return {
    settings: deps.settings,
    checkout(key, fingerprint, sessionId) {
      const entry = entries.get(key);
      if (!entry || entry.busy) return undefined;
      const misfit = !entry.process.usable()
        ? 'it has ended'
        : entry.fingerprint !== fingerprint
          ? 'the configuration it was started with changed'
          : entry.sessionId !== sessionId
            ? 'the conversation moved to another engine session'
            : undefined;
      if (misfit) {
        retire(entry, misfit);
        return undefined;
      }
      clearIdle(entry);
      entry.busy = true;
      return entry;
    },
    makeRoom(key) {
      const own = entries.get(key);
      if (own && !own.busy) retire(own, 'replaced by a new process for the conversation');
      const max = deps.settings().maxProcesses;
      while (entries.size >= max) {
        const idle = leastRecentlyUsedIdle();
        if (!idle) return false;
        retire(idle, `room for a new process (warm.maxProcesses: ${max})`);
      }
      return true;
    },
    add(entry) {
      const old = entries.get(entry.key);
      if (old && old !== entry) retire(old, 'replaced by a new process for the conversation');
      entries.set(entry.key, entry);
      // A process that ends between turns (a crash, the OOM killer) leaves its slot at once.
      void entry.process.ended.then((exit) => {
        if (entries.get(entry.key) !== entry) return; // retired first: we stopped it
        deps.endedByItself?.(entry, exit);
        if (!entry.busy) retire(entry, 'it ended by itself');
      });
    },
    checkin(entry) {
      entry.busy = false;
      entry.lastUsed = clock.now();
      if (entries.get(entry.key) !== entry) return; // already retired
      const settings = deps.settings();
      if (entry.retiring) retire(entry, entry.retiring);
      else if (!entry.process.usable()) retire(entry, 'it cannot take another turn');
      else if (!settings.enabled) retire(entry, 'warm.enabled is off');
      else if (entries.size > settings.maxProcesses) retire(entry, `warm.maxProcesses is ${settings.maxProcesses}`);
      else armIdle(entry);
    },
    retire,
    retireWhere(pred, why) {
      for (const entry of [...entries.values()]) {
        if (!pred(entry)) continue;
        if (entry.busy) entry.retiring = why;
        else retire(entry, why);
      }
    },
    trim() {
      const max = deps.settings().maxProcesses;
      for (let idle = leastRecentlyUsedIdle(); entries.size > max && idle; idle = leastRecentlyUsedIdle()) {
        retire(idle, `warm.maxProcesses is ${max}`);
      }
    },
    async stopAll() {
      for (const entry of [...entries.values()]) retire(entry, 'the assistant is stopping');
      await Promise.allSettled([...ending]);
    },
    processesOf: (key) => entries.get(key)?.process.processes() ?? [],
    list: () =>
      [...entries.values()].map((e) => ({
        pid: e.process.pid,
        engine: e.engine,
        sessionKey: e.key,
        busy: e.busy,
        turns: e.turns,
        startedAt: e.startedAt,
        lastUsedAt: e.lastUsed,
      })),
  };
}
