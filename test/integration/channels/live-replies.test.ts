/**
 * `streaming` delivery growing one reply on Telegram, Slack and Discord: the real adapter (the
 * platform's SDK) against its fake, the turn's events pushed by the test. What is asserted is what
 * the platform received: posts, edits, drafts and their text.
 */
import { describe, expect, it } from 'vitest';
import { deliverTurn } from '../../../src/channels/delivery.js';
import { splitMessage } from '../../../src/channels/split.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { createScript, LIVE_PLATFORMS, startLive, text } from '../../helpers/live-replies.js';
import { cleanupAfterEach, failOnLeaksAfterAll } from '../../helpers/resources.js';

const defer = cleanupAfterEach();
failOnLeaksAfterAll();

const log = createSilentLogger();
/** What a person reads, whichever markup the fake reports (Slack mrkdwn and Discord Markdown keep theirs). */
const seen = (o: { text: string }) => o.text.replace(/[*_`]/g, '');

describe.each(LIVE_PLATFORMS)('$title: one growing reply', (p) => {
  it('three paragraphs with pauses: one message, shown growing at least twice, its last version the whole reply', async () => {
    const live = await startLive(p, defer);
    const { fake, adapter, to } = live;
    const script = createScript();
    const done = deliverTurn(adapter, to, script.events, { mode: 'streaming', showToolCalls: false, log });
    script.push(text('Paragraph one.\n\n'));
    await fake.waitForOutbound((o) => o.text.includes('Paragraph one.'));
    script.push(text('Paragraph *two*.\n\n'));
    await fake.waitForOutbound((o) => seen(o).includes('Paragraph two.'));
    const final = 'Paragraph one.\n\nParagraph *two*.\n\nParagraph three.';
    script.push(text('Paragraph three.'));
    script.end(final);
    expect((await done).text).toBe(final);

    const messages = live.messages();
    expect(messages).toHaveLength(1);
    const versions = p.grows === 'drafts' ? live.shown() : (messages[0]?.versions ?? []);
    expect(versions.length).toBeGreaterThanOrEqual(3);
    expect(versions.map(seen)).toEqual(['Paragraph one.', 'Paragraph one.\n\nParagraph two.', 'Paragraph one.\n\nParagraph two.\n\nParagraph three.']);
    // The final version is exactly the final text in the platform's markup.
    expect(p.raw(versions.at(-1) as never)).toBe(adapter.render(final));
    if (p.grows === 'drafts') {
      expect(versions.slice(0, -1).every((o) => o.kind === 'stream')).toBe(true);
      expect(versions.at(-1)?.kind).toBe('reply');
    } else {
      expect(versions.slice(1).every((o) => o.kind === 'edit')).toBe(true);
    }
    expect(fake.rejections).toEqual([]);
  });

  it('past the platform limit the message is closed and the reply goes on in new ones, split where buffered splits', async () => {
    const live = await startLive(p, defer);
    const { fake, adapter, to } = live;
    const paragraph = (i: number) => `Paragraph ${i}: ${'lorem ipsum dolor sit amet '.repeat(10).trim()}.`;
    const count = Math.ceil((adapter.limit.max * 1.6) / paragraph(0).length);
    const paragraphs = Array.from({ length: count }, (_, i) => paragraph(i));
    const final = paragraphs.join('\n\n');
    const parts = splitMessage(final, adapter.limit, (md) => adapter.render(md));
    expect(parts.length).toBeGreaterThanOrEqual(2);

    const script = createScript();
    const done = deliverTurn(adapter, to, script.events, { mode: 'streaming', showToolCalls: false, log });
    for (const [i, para] of paragraphs.entries()) {
      script.push(text(`${para}\n\n`));
      // Now and then a pause, so that the reply is seen growing and overflowing, not only its end.
      if (i % 4 === 3) await fake.waitForOutbound((o) => o.text.includes(`Paragraph ${i}:`));
    }
    script.end(final);
    await done;

    const messages = live.messages();
    expect(messages.map((m) => p.raw(m.versions.at(-1) as never))).toEqual(parts.map((part) => adapter.render(part)));
    for (const m of messages) for (const v of m.versions) expect(p.raw(v).length).toBeLessThanOrEqual(adapter.limit.max);
    expect(fake.rejections).toEqual([]);
  });

  it('showToolCalls: a status line names the running tool under the text, and is gone from the final version', async () => {
    const live = await startLive(p, defer);
    const { fake, adapter, to } = live;
    const script = createScript();
    const done = deliverTurn(adapter, to, script.events, { mode: 'streaming', showToolCalls: true, log, mask: (t) => t.replaceAll('s3cret', 'HIDDEN') });
    script.push(text('Let me look.'), { type: 'tool_call', name: 'Bash', args: JSON.stringify({ command: 'ls -la s3cret-dir' }) });
    const first = await fake.waitForOutbound((o) => o.text.includes('running:'));
    expect(seen(first)).toBe('Let me look.\n\nrunning: Bash ls -la HIDDEN-dir');
    script.push({ type: 'tool_result', content: 'total 0' }, { type: 'tool_call', name: 'Read', args: JSON.stringify({ file_path: '/tmp/notes.md' }) });
    await fake.waitForOutbound((o) => seen(o).includes('running: Read /tmp/notes.md'));
    script.push({ type: 'tool_result', content: '…' }, text('Found it.'));
    script.end('Let me look.\n\nFound it.');
    await done;

    const versions = p.grows === 'drafts' ? live.shown() : (live.messages()[0]?.versions ?? []);
    expect(live.messages()).toHaveLength(1);
    expect(versions.at(-1)?.text).toBe('Let me look.\n\nFound it.');
    expect(p.raw(versions.at(-1) as never)).toBe(adapter.render('Let me look.\n\nFound it.'));
    // The second tool replaced the first one's line rather than adding a line.
    expect(versions.filter((o) => o.text.includes('running:')).every((o) => (o.text.match(/running:/g) ?? []).length === 1)).toBe(true);
  });
  it('a turn that ends without text: a message that only showed the status line is deleted', async () => {
    const live = await startLive(p, defer);
    const script = createScript();
    const done = deliverTurn(live.adapter, live.to, script.events, { mode: 'streaming', showToolCalls: true, log });
    script.push({ type: 'tool_call', name: 'Bash', args: JSON.stringify({ command: 'true' }) });
    const status = await live.fake.waitForOutbound((o) => seen(o).includes('running: Bash true'));
    script.push({ type: 'tool_result', content: '' });
    script.end('');
    expect((await done).text).toBe('');
    if (p.grows === 'drafts') {
      // A draft is never kept: it fades by itself, and nothing was sent.
      expect(live.messages()).toEqual([]);
      return;
    }
    const calls = (live.fake as unknown as { calls?: Array<{ method: string; params: Record<string, unknown> }> }).calls;
    const gone =
      p.key === 'channel_f'
        ? (live.fake as unknown as { getMessage(id: string): unknown }).getMessage(status.messageId ?? '') === undefined
        : (calls ?? []).some((c) => /^(deletemessage|chat\.delete)$/.test(c.method));
    expect(gone).toBe(true);
  });
});
