import { describe, expect, it } from 'vitest';
import { isRefusal, partsWithStatus, textAfter } from '../../../src/channels/delivery/live-reply.js';
import { createChatPacer } from '../../../src/channels/delivery/pacer.js';
import { formatToolStatus, TOOL_STATUS_MAX } from '../../../src/channels/delivery/tool-status.js';
import { ChannelError } from '../../../src/channels/types.js';
import { isRecording } from '../../../src/channels/voice/voice-notes.js';

const limit = { max: 40, unit: 'chars' as const };

describe('a growing reply, its pure parts', () => {
  it('parts: split as buffered splits, the status line under the last part only where it fits', () => {
    expect(partsWithStatus('', '_running:_ `ls`', limit, (s) => s)).toEqual(['_running:_ `ls`']);
    expect(partsWithStatus('Short.', '_running:_ `ls`', limit, (s) => s)).toEqual(['Short.\n\n_running:_ `ls`']);
    const long = `${'a'.repeat(30)}\n\n${'b'.repeat(30)}`;
    expect(partsWithStatus(long, 'status!', limit, (s) => s)).toEqual(['a'.repeat(30), `${'b'.repeat(30)}\n\nstatus!`]);
    // No room: the status waits for the next update rather than overflowing or splitting the text.
    expect(partsWithStatus('c'.repeat(38), 'status!', limit, (s) => s)).toEqual(['c'.repeat(38)]);
    // Measured rendered, as the platform counts.
    expect(partsWithStatus('x'.repeat(20), 'y', limit, (s) => s.replace(/x/g, 'xx'))).toEqual(['x'.repeat(20)]);
  });

  it('textAfter: the rest of the final text after what was shown, whitespace aside; undefined when it diverged', () => {
    expect(textAfter('One.\n\nTwo.\n\nThree.', 'One.\n\nTwo.')).toBe('Three.');
    expect(textAfter('One.\nTwo. Three.', 'One.\n\nTwo.')).toBe('Three.');
    expect(textAfter('One.', '')).toBe('One.');
    expect(textAfter('Uno.\n\nDos.', 'One.')).toBeUndefined();
    expect(textAfter('😀 then more', '😀')).toBe('then more');
  });

  it('refusals are what the platform says no to for good; a wait, the network or a stopped adapter are not', () => {
    for (const kind of ['not_found', 'format', 'too_long', 'auth', 'other'] as const) expect(isRefusal(new ChannelError('x', kind, 'no'))).toBe(true);
    for (const kind of ['rate_limited', 'network', 'not_connected', 'lifecycle'] as const) expect(isRefusal(new ChannelError('x', kind, 'no'))).toBe(false);
    expect(isRefusal(new Error('boom'))).toBe(false);
  });
});

describe('the status line of a running tool', () => {
  const mask = (t: string) => t.replaceAll('hunter2', '********');

  it('names the tool and what it runs, on one line, masked, cut, in a code span', () => {
    expect(formatToolStatus({ name: 'Bash', args: JSON.stringify({ command: 'ls -la' }) }, mask)).toBe('_running:_ `Bash ls -la`');
    expect(formatToolStatus({ name: 'Read', args: JSON.stringify({ file_path: '/etc/hosts' }) }, mask)).toBe('_running:_ `Read /etc/hosts`');
    expect(formatToolStatus({ name: 'TodoWrite', args: '{}' }, mask)).toBe('_running:_ `TodoWrite`');
    expect(formatToolStatus({ name: 'Bash', args: JSON.stringify({ command: 'echo hunter2\nrm -rf x' }) }, mask)).toBe(
      '_running:_ `Bash echo ********\\nrm -rf x`',
    );
    const cut = formatToolStatus({ name: 'Bash', args: JSON.stringify({ command: 'x'.repeat(500) }) }, mask);
    expect(cut).toBe(`_running:_ \`Bash ${'x'.repeat(TOOL_STATUS_MAX - 6)}…\``);
    // Backticks in the command cannot close the span early.
    expect(formatToolStatus({ name: 'Bash', args: JSON.stringify({ command: 'echo `date`' }) }, mask)).toBe('_running:_ `` Bash echo `date` ``');
  });
});

describe('the per-chat pace of a growing reply', () => {
  function clocked() {
    let now = 0;
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
      now += ms;
    };
    return { waits, pacer: createChatPacer({ intervalMs: 1000, sleep, now: () => now, maxWaitMs: 60_000 }), tick: (ms: number) => (now += ms) };
  }

  it('one call per interval in a chat; other chats are not held up', async () => {
    const { waits, pacer } = clocked();
    const order: string[] = [];
    await Promise.all([
      pacer.run('a', async () => order.push('a1')),
      pacer.run('a', async () => order.push('a2')),
      pacer.run('b', async () => order.push('b1')),
    ]);
    expect(order).toEqual(['a1', 'b1', 'a2']);
    expect(waits).toEqual([1000]);
  });

  it('a 429 is waited out for its retry_after, then the same call again; a 429 without one backs off', async () => {
    const { waits, pacer } = clocked();
    let calls = 0;
    const result = await pacer.run('a', async () => {
      calls++;
      if (calls === 1) throw new ChannelError('x', 'rate_limited', 'slow down', { retryAfterMs: 7000 });
      if (calls === 2) throw new ChannelError('x', 'rate_limited', 'slow down');
      return 'sent';
    });
    expect(result).toBe('sent');
    expect(waits).toEqual([7000, 1000]);
  });

  it('network failures are tried again for edits only; refusals and long waits are reported', async () => {
    const { pacer } = clocked();
    let edits = 0;
    await pacer.run(
      'a',
      async () => {
        if (++edits < 3) throw new ChannelError('x', 'network', 'reset');
      },
      { idempotent: true },
    );
    expect(edits).toBe(3);
    let posts = 0;
    await expect(
      pacer.run('a', async () => {
        posts++;
        throw new ChannelError('x', 'network', 'reset');
      }),
    ).rejects.toThrow('reset');
    expect(posts).toBe(1);
    await expect(pacer.run('a', async () => Promise.reject(new ChannelError('x', 'not_found', 'gone')))).rejects.toThrow('gone');
    await expect(
      pacer.run('a', async () => Promise.reject(new ChannelError('x', 'rate_limited', 'wait an hour', { retryAfterMs: 3_600_000 }))),
    ).rejects.toThrow('wait an hour');
  });
});

describe('recordings among a message files', () => {
  it('marked by the adapter, an audio type, or a recording name without a type', () => {
    expect(isRecording({ name: 'a.bin' }, { kind: 'voice' })).toBe(true);
    expect(isRecording({ name: 'clip', mimeType: 'audio/ogg' })).toBe(true);
    expect(isRecording({ name: 'audio.opus', mimeType: 'application/octet-stream' })).toBe(true);
    expect(isRecording({ name: 'notes.pdf', mimeType: 'application/pdf' })).toBe(false);
    expect(isRecording({ name: 'movie.mp4', mimeType: 'video/mp4' })).toBe(false);
    expect(isRecording({ name: 'song.mp3', mimeType: 'text/plain' })).toBe(false);
  });
});
