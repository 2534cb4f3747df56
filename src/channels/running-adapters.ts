import type { ChannelAdapter } from './types.js';

/**
 * The adapters connected right now, by channel key. The hub writes it (an adapter is in it while
 * it runs; a restart replaces it); the bridge and history catch-up read it when they need to
 * reply, so a message that waited through a reconnect goes out on the adapter running then.
 */
export interface RunningAdapters {
  get(channel: string): ChannelAdapter | undefined;
  all(): ChannelAdapter[];
}

export interface RunningAdapterTable extends RunningAdapters {
  set(channel: string, adapter: ChannelAdapter): void;
  /** Remove the channel's entry if it is still this adapter (a newer one stays). */
  remove(channel: string, adapter: ChannelAdapter): void;
}

export function createRunningAdapters(): RunningAdapterTable {
  const table = new Map<string, ChannelAdapter>();
  return {
    get: (channel) => table.get(channel),
    all: () => [...table.values()],
    set: (channel, adapter) => void table.set(channel, adapter),
    remove(channel, adapter) {
      if (table.get(channel) === adapter) table.delete(channel);
    },
  };
}
