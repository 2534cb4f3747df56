import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../../helpers/server.js';

/** POST /v1/chat/completions and GET /v1/models through the official `openai` npm client, over a real socket. */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const client = (apiKey = TEST_TOKEN, maxRetries = 0) => new OpenAI({ apiKey, baseURL: `${(s as TestServer).url}/v1`, maxRetries });

describe('the official openai client against the gateway', () => {
  it('chat.completions.create without streaming gets the answer; the same `user` continues the conversation', async () => {
    s = await startTestServer();
    const openai = client();
    const first = await openai.chat.completions.create({ model: 'whatever-model', user: 'alice', messages: [{ role: 'user', content: 'hello there' }] });
    expect(first.choices[0]?.message.content).toBe('ECHO: hello there\nTURN: 1');
    expect(first.model).toBe('whatever-model');
    expect(first.object).toBe('chat.completion');
    const second = await openai.chat.completions.create({
      model: 'whatever-model',
      user: 'alice',
      messages: [
        { role: 'user', content: 'hello there' },
        { role: 'assistant', content: 'ECHO: hello there\nTURN: 1' },
        { role: 'user', content: 'and again' },
      ],
    });
    expect(second.choices[0]?.message.content).toBe('ECHO: and again\nTURN: 2');
    expect((await openai.models.list()).data.map((m) => m.id)).toEqual(['tester']);
  });

  it('chat.completions.create with stream: true yields chunks that add up to the answer', async () => {
    s = await startTestServer();
    const stream = await client().chat.completions.create({
      model: 'm',
      stream: true,
      user: 'bob',
      messages: [{ role: 'user', content: 'PARAGRAPHS stream it' }],
    });
    let text = '';
    const finish: Array<string | null> = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish.push(chunk.choices[0]?.finish_reason ?? null);
    }
    expect(finish.at(-1)).toBe('stop');
    expect(text).toBe((await s.store.readHistory('bob')).at(-1)?.text);
    expect(text.length).toBeGreaterThan(20);
  });

  it('a wrong key gets OpenAI’s 401 error shape, as the client reads it', async () => {
    s = await startTestServer();
    const err = await client('sk-wrong')
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'invalid_request_error', param: null });
    expect(s.standIn.runs()).toHaveLength(0);
  });

  it('a failed turn is an APIError the client does not retry by itself, streamed or not', async () => {
    s = await startTestServer();
    const openai = client(TEST_TOKEN, 2); // the client's default: two retries
    const err = await openai.chat.completions
      .create({ model: 'm', user: 'f', messages: [{ role: 'user', content: 'FAIL:the model is down' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err).toMatchObject({ status: 502, code: 'engine_failed' });
    expect(String((err as Error).message)).toContain('the model is down');
    expect(s.standIn.runs()).toHaveLength(1);
    const stream = await openai.chat.completions.create({ model: 'm', stream: true, user: 'f', messages: [{ role: 'user', content: 'FAIL:still down' }] });
    const streamed = await (async () => {
      for await (const _ of stream) {
        // the role chunk comes first; the failure ends the stream
      }
    })().catch((e: unknown) => e);
    expect(streamed).toBeInstanceOf(OpenAI.APIError);
    expect(String((streamed as Error).message)).toContain('still down');
    expect(s.standIn.runs()).toHaveLength(2);
  });

  it('an approval request is told in the streamed text and answered with /allow <id> on the same session', async () => {
    s = await startTestServer({ yaml: 'skipPermissions: false\n' });
    const openai = client();
    const stream = await openai.chat.completions.create({
      model: 'm',
      stream: true,
      user: 'asker',
      messages: [{ role: 'user', content: 'ASK:echo done > OPENAI-SIDE-EFFECT.txt' }],
    });
    let text = '';
    let answered = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      const id = /`\/allow (\w+)`/.exec(text)?.[1];
      if (id && !answered) {
        answered = true;
        expect(text).toContain('The assistant asks to use Bash: `echo done > OPENAI-SIDE-EFFECT.txt`');
        const allow = await openai.chat.completions.create({ model: 'm', user: 'asker', messages: [{ role: 'user', content: `/allow ${id}` }] });
        expect(allow.choices[0]?.message.content).toMatch(/allow/i);
      }
    }
    expect(answered).toBe(true);
    expect(text).toContain('ALLOWED');
  });

  it('an image as an image_url data URL reaches the engine', async () => {
    s = await startTestServer();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);
    const answer = await client().chat.completions.create({
      model: 'm',
      user: 'pics',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is in it' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
          ],
        },
      ],
    });
    expect(answer.choices[0]?.message.content).toContain('ECHO: what is in it');
    expect(s.standIn.runs()[0]?.images).toEqual([expect.objectContaining({ exists: true, bytes: png.length })]);
  });
});
