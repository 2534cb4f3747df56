import type { ChannelAdapter } from './types.js';

/**
 * The adapters connected right now, by channel key. The hub writes it (an adapter is in it once
 * it has connected; a restart replaces it); the bridge and history catch-up read it when they need
 * to reply, so a message that waited through a reconnect goes out on the adapter running then.
 */
export interface RunningAdapters {
  get(channel: string): ChannelAdapter | undefined;
  /**
   * The channel's adapter once it runs: at once when it does, else when it next connects (a
   * platform may hand over messages while its adapter is still starting, or during a reconnect),
   * or undefined after `timeoutMs`.
   */
  whenRunning(channel: string, timeoutMs: number): Promise<ChannelAdapter | undefined>;
  all(): ChannelAdapter[];
}

export interface RunningAdapterTable extends RunningAdapters {
  set(channel: string, adapter: ChannelAdapter): void;
  /** Remove the channel's entry if it is still this adapter (a newer one stays). */
  remove(channel: string, adapter: ChannelAdapter): void;
}

export function createRunningAdapters(): RunningAdapterTable {
  const table = new Map<string, ChannelAdapter>();
  const waiters = new Map<string, Set<(a: ChannelAdapter) => void>>();
  return {
    get: (channel) => table.get(channel),
    whenRunning(channel, timeoutMs) {
      const now = table.get(channel);
      if (now) return Promise.resolve(now);
      return new Promise((resolve) => {
        const set = waiters.get(channel) ?? new Set();
        waiters.set(channel, set);
        const done = (a: ChannelAdapter | undefined) => {
          clearTimeout(timer);
          set.delete(wake);
          resolve(a);
        };
        const wake = (a: ChannelAdapter) => done(a);
        const timer = setTimeout(() => done(undefined), timeoutMs);
        timer.unref();
        set.add(wake);
      });
    },
    all: () => [...table.values()],
    set(channel, adapter) {
      table.set(channel, adapter);
      for (const wake of [...(waiters.get(channel) ?? [])]) wake(adapter);
    },
    remove(channel, adapter) {
      if (table.get(channel) === adapter) table.delete(channel);
    },
  };
}
