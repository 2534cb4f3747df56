import { afterEach, describe, expect, it } from 'vitest';
import { parseSseStrict, startTestServer, TEST_TOKEN, type TestServer } from '../../helpers/server.js';

/**
 * The contract to the letter over HTTP: the reply is every text event, every processed message
 * (slash commands too) is an activity event counted by source, and one rule says what a slash
 * command is.
 */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

type Event = Record<string, unknown> & { type: string };

async function chatEvents(res: Response): Promise<Event[]> {
  return parseSseStrict(await res.text()) as Event[];
}

/** An open GET /api/events: the activity records it has sent so far, and a wait for one. */
async function openFeed(server: TestServer) {
  const res = await fetch(`${server.url}/api/events?token=${TEST_TOKEN}`);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const records = () => parseSseStrict(text.slice(0, text.lastIndexOf('\n\n') + 2)) as Array<Record<string, unknown>>;
  return {
    records,
    async waitFor(match: (r: Record<string, unknown>) => boolean, ms = 10_000): Promise<Record<string, unknown>> {
      const deadline = Date.now() + ms;
      for (;;) {
        const found = records().find(match);
        if (found) return found;
        const left = deadline - Date.now();
        const next = await Promise.race([reader.read(), new Promise<'late'>((r) => setTimeout(() => r('late'), Math.max(left, 0)))]);
        if (next === 'late') throw new Error(`no matching activity; got ${JSON.stringify(records())}`);
        const { done, value } = next;
        if (done) throw new Error('the activity stream ended');
        text += decoder.decode(value, { stream: true });
      }
    },
    close: () => reader.cancel().catch(() => undefined),
  };
}

describe('POST /chat: the reply is the text events joined', () => {
  it('a tool call between two paragraphs: completion.finalText === the text events, all three paragraphs', async () => {
    s = await startTestServer();
    const events = await chatEvents(await s.api('/chat', { json: { message: 'PARAGRAPHS' } }));
    const joined = events
      .filter((e) => e.type === 'text')
      .map((e) => e.content)
      .join('');
    expect(events.map((e) => e.type)).toContain('tool_call');
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: joined });
    expect(joined).toBe('First paragraph.\n\nSecond paragraph.\n\nThird paragraph.');
  });
});

describe('every processed message is an activity event, slash commands included', () => {
  it('a slash command over HTTP is broadcast on /api/events and counted under "http"', async () => {
    s = await startTestServer();
    const feed = await openFeed(s);
    const answer = await s.api('/chat', { json: { message: '/status', sessionKey: 'k1' } });
    expect(await answer.json()).toMatchObject({ type: 'command', text: expect.stringContaining('tester on engine_b') });
    const record = await feed.waitFor((r) => r.messagePreview === '/status');
    expect(record).toMatchObject({
      source: 'http',
      sender: 'http',
      messagePreview: '/status',
      responsePreview: expect.stringContaining('tester on engine_b'),
      costUsd: 0,
      status: 'completed',
      sessionKey: 'k1',
    });
    expect(typeof record.durationMs).toBe('number');
    expect(Number.isNaN(Date.parse(String(record.ts)))).toBe(false);

    await s.api('/chat', { json: { message: '/nope' } });
    expect(await feed.waitFor((r) => r.messagePreview === '/nope')).toMatchObject({
      source: 'http',
      status: 'failed',
      error: expect.stringContaining('Unknown command'),
    });
    await feed.close();

    const status = (await (await s.api('/api/status')).json()) as { metrics: { totalMessages: number; messagesBySource: Record<string, number> } };
    expect(status.metrics).toMatchObject({ totalMessages: 2, messagesBySource: { http: 2 } });
    expect(s.standIn.runs()).toEqual([]);
  });
});

describe('slash-command detection: a message whose first character is "/"', () => {
  it('" /help" (leading space) goes to the assistant as typed; "/1abc" and "/" are answered as unknown commands', async () => {
    s = await startTestServer();
    const spaced = await s.api('/chat', { json: { message: ' /help' } });
    expect(spaced.headers.get('content-type')).toBe('text/event-stream');
    expect((await chatEvents(spaced)).at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: 'ECHO:  /help\nTURN: 1' });
    expect((s.standIn.runs()[0] as { prompt: string }).prompt).toBe(' /help');

    for (const message of ['/1abc', '/', '/ help']) {
      const res = await s.api('/chat', { json: { message } });
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(await res.json()).toMatchObject({ type: 'command', error: 'unknown_command', text: expect.stringContaining('start it with a space') });
    }
    expect(s.standIn.runs()).toHaveLength(1);
  });
});
