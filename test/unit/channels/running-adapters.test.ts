import { describe, expect, it } from 'vitest';
import { createRunningAdapters } from '../../../src/channels/running-adapters.js';
import type { ChannelAdapter } from '../../../src/channels/types.js';

const adapter = (name: string) => ({ name }) as unknown as ChannelAdapter;

describe('running adapters', () => {
  it('whenRunning: at once when connected, on the next connect otherwise, undefined when it never comes', async () => {
    const table = createRunningAdapters();
    const a = adapter('channel_x');
    const waiting = table.whenRunning('channel_x', 60_000);
    table.set('channel_x', a);
    expect(await waiting).toBe(a);
    expect(await table.whenRunning('channel_x', 60_000)).toBe(a);
    table.remove('channel_x', a);
    expect(await table.whenRunning('channel_x', 20)).toBeUndefined();
  });

  it('remove leaves a newer adapter of the same channel in place', () => {
    const table = createRunningAdapters();
    const old = adapter('c');
    const fresh = adapter('c');
    table.set('c', old);
    table.set('c', fresh);
    table.remove('c', old);
    expect(table.get('c')).toBe(fresh);
  });
});
