import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeLlm, FAKE_ASKING_COMMAND, FAKE_PREAMBLE, FAKE_TOOL_COMMAND, FAKE_TITLE, type FakeLlm } from '../fakes/fake-llm.js';

interface SseEvent {
  event?: string;
  data: string;
}

function parseSse(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  for (const block of text.split('\n\n')) {
    if (!block.trim()) continue;
    const ev: SseEvent = { data: '' };
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) ev.event = line.slice(7);
      else if (line.startsWith('data: ')) ev.data += line.slice(6);
    }
    out.push(ev);
  }
  return out;
}

let llm: FakeLlm;
beforeAll(async () => {
  llm = await startFakeLlm();
});
afterAll(async () => {
  await llm.close();
});

async function post(path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(llm.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const anthropicKey = { 'x-api-key': 'fake-key', 'anthropic-version': '2023-06-01' };
const openaiKey = { authorization: 'Bearer fake-key' };

describe('fake LLM: Anthropic Messages', () => {
  it('streams a text answer in several deltas, with usage', async () => {
    const res = await post(
      '/v1/messages?beta=true',
      {
        model: 'fake-model',
        stream: true,
        max_tokens: 100,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: '<system-reminder>ctx</system-reminder>' },
              { type: 'text', text: 'hello there' },
            ],
          },
          { role: 'system', content: 'mid-conversation system message' },
        ],
      },
      anthropicKey,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const events = parseSse(await res.text());
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(['message_start', 'content_block_start', 'message_delta', 'message_stop']));
    const deltas = events.filter((e) => e.event === 'content_block_delta').map((e) => JSON.parse(e.data).delta.text as string);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('FAKE-LLM-REPLY: hello there');
    const delta = JSON.parse(events.find((e) => e.event === 'message_delta')!.data);
    expect(delta.delta.stop_reason).toBe('end_turn');
    expect(delta.usage.output_tokens).toBeGreaterThan(0);
    expect(llm.requests.at(-1)?.api).toBe('anthropic');
  });

  it('answers RUN-TOOL with one Bash tool_use, then text once the result is in', async () => {
    const first = parseSse(
      await (await post('/v1/messages', { model: 'm', stream: true, messages: [{ role: 'user', content: 'RUN-TOOL now' }] }, anthropicKey)).text(),
    );
    const start = JSON.parse(first.find((e) => e.event === 'content_block_start')!.data).content_block;
    expect(start).toMatchObject({ type: 'tool_use', name: 'Bash' });
    const json = first
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => JSON.parse(e.data).delta.partial_json as string)
      .join('');
    expect(JSON.parse(json).command).toBe(FAKE_TOOL_COMMAND);
    expect(JSON.parse(first.find((e) => e.event === 'message_delta')!.data).delta.stop_reason).toBe('tool_use');

    const second = await post(
      '/v1/messages',
      {
        model: 'm',
        stream: false,
        messages: [
          { role: 'user', content: 'RUN-TOOL now' },
          { role: 'assistant', content: [{ type: 'tool_use', id: start.id, name: 'Bash', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: start.id, content: 'FAKE-TOOL-OUTPUT' }] },
        ],
      },
      anthropicKey,
    );
    const body = (await second.json()) as { content: Array<{ text: string }> };
    expect(body.content[0]!.text).toBe('FAKE-LLM-REPLY: RUN-TOOL now');
  });

  it('rejects a wrong key with 401 and the Anthropic error shape', async () => {
    const res = await post('/v1/messages', { model: 'm', messages: [{ role: 'user', content: 'x' }] }, { 'x-api-key': 'nope' });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });

  it('answers HEAD / and count_tokens', async () => {
    expect((await fetch(`${llm.url}/`, { method: 'HEAD' })).status).toBe(200);
    const res = await post('/v1/messages/count_tokens', { model: 'm', messages: [{ role: 'user', content: 'x' }] }, anthropicKey);
    expect(await res.json()).toEqual({ input_tokens: expect.any(Number) });
  });
});

describe('fake LLM: OpenAI Chat Completions', () => {
  const chunksOf = async (res: Response): Promise<Array<Record<string, any>>> => {
    const events = parseSse(await res.text());
    expect(events.at(-1)!.data).toBe('[DONE]');
    return events.slice(0, -1).map((e) => JSON.parse(e.data));
  };

  it('streams text deltas and a usage chunk, and strips OpenCode quoting', async () => {
    const res = await post(
      '/v1/chat/completions',
      {
        model: 'fake-model',
        stream: true,
        stream_options: { include_usage: true },
        messages: [
          { role: 'system', content: 'sys' },
          { role: 'user', content: '"first \\"one\\""' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: '"second"' },
        ],
      },
      openaiKey,
    );
    const chunks = await chunksOf(res);
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(chunks.filter((c) => c.choices[0]?.delta?.content).length).toBeGreaterThan(1);
    expect(text).toBe('FAKE-LLM-REPLY: second\nPREVIOUS-USER-MESSAGE: first "one"');
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'stop')).toBe(true);
    expect(chunks.at(-1)!.usage.total_tokens).toBeGreaterThan(0);
  });

  it('streams a bash tool call in the delta format', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: 'm', stream: true, messages: [{ role: 'user', content: 'RUN-TOOL' }], tools: [{ type: 'function', function: { name: 'bash' } }] },
      openaiKey,
    );
    const chunks = await chunksOf(res);
    const calls = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'bash' } });
    const args = JSON.parse(calls.map((c: any) => c.function.arguments as string).join(''));
    expect(args).toEqual({ command: FAKE_TOOL_COMMAND, description: expect.any(String) });
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'tool_calls')).toBe(true);
  });

  it('gives a title to a tools-less title-generation call', async () => {
    const res = await post(
      '/v1/chat/completions',
      {
        model: 'm',
        stream: false,
        messages: [
          { role: 'system', content: 'You are a title generator.' },
          { role: 'user', content: 'RUN-TOOL' },
        ],
      },
      openaiKey,
    );
    expect(((await res.json()) as any).choices[0].message.content).toBe(FAKE_TITLE);
  });

  it('rejects a wrong key with 401 and the OpenAI error shape; lists models', async () => {
    const res = await post('/v1/chat/completions', { model: 'm', messages: [] }, { authorization: 'Bearer wrong-key' });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: 'invalid_api_key', type: 'invalid_request_error' } });
    const models = await fetch(`${llm.url}/v1/models`, { headers: openaiKey });
    expect(((await models.json()) as any).data.map((m: any) => m.id)).toEqual(['fake-model']);
  });
});

describe('fake LLM: OpenAI Responses', () => {
  const eventsOf = async (res: Response): Promise<Array<Record<string, any>>> =>
    parseSse(await res.text()).map((e) => ({ event: e.event, ...JSON.parse(e.data) }));

  it('streams output_text deltas and response.completed with usage, skipping Codex context messages', async () => {
    const res = await post(
      '/v1/responses',
      {
        model: 'fake-model',
        stream: true,
        input: [
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'dev' }] },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>\n<cwd>/x</cwd>\n</environment_context>' }] },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'SAY:[PASS]' }] },
        ],
      },
      openaiKey,
    );
    const events = await eventsOf(res);
    expect(events[0]!.type).toBe('response.created');
    expect(events.every((e) => e.event === e.type)).toBe(true);
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((d) => d.delta).join('')).toBe('[PASS]');
    const done = events.at(-1)!;
    expect(done.type).toBe('response.completed');
    expect(done.response.usage.total_tokens).toBeGreaterThan(0);
  });

  it('answers RUN-TOOL with an exec_command function call, then text after function_call_output', async () => {
    const first = await eventsOf(await post('/v1/responses', { model: 'm', stream: true, input: [{ role: 'user', content: 'RUN-TOOL go' }] }, openaiKey));
    const item = first.find((e) => e.type === 'response.output_item.done')!.item;
    expect(item).toMatchObject({ type: 'function_call', name: 'exec_command' });
    expect(JSON.parse(item.arguments)).toEqual({ cmd: FAKE_TOOL_COMMAND });
    expect(first.some((e) => e.type === 'response.function_call_arguments.delta')).toBe(true);

    const second = await eventsOf(
      await post(
        '/v1/responses',
        {
          model: 'm',
          stream: true,
          input: [
            { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'RUN-TOOL go' }] },
            item,
            { type: 'function_call_output', call_id: item.call_id, output: 'FAKE-TOOL-OUTPUT' },
          ],
        },
        openaiKey,
      ),
    );
    expect(second.find((e) => e.type === 'response.output_text.done')!.text).toBe('FAKE-LLM-REPLY: RUN-TOOL go');
  });

  it('rejects a missing key with 401', async () => {
    const res = await post('/v1/responses', { model: 'm', input: 'x' }, {});
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.type).toBe('invalid_request_error');
  });
});

describe('fake LLM: TEXT-THEN-TOOL (a text block, then the tool call, in one message)', () => {
  const chunksOf = async (res: Response): Promise<Array<Record<string, any>>> =>
    parseSse(await res.text())
      .filter((e) => e.data !== '[DONE]')
      .map((e) => JSON.parse(e.data));
  const eventsOf = async (res: Response): Promise<Array<Record<string, any>>> =>
    parseSse(await res.text()).map((e) => ({ event: e.event, ...JSON.parse(e.data) }));

  it('Anthropic: a text block at index 0, the tool_use at index 1', async () => {
    const events = parseSse(
      await (await post('/v1/messages', { model: 'm', stream: true, messages: [{ role: 'user', content: 'TEXT-THEN-TOOL now' }] }, anthropicKey)).text(),
    ).filter((e) => e.event?.startsWith('content_block'));
    const starts = events.filter((e) => e.event === 'content_block_start').map((e) => JSON.parse(e.data));
    expect(starts.map((s) => [s.index, s.content_block.type])).toEqual([
      [0, 'text'],
      [1, 'tool_use'],
    ]);
    const text = events
      .map((e) => JSON.parse(e.data))
      .filter((d) => d.delta?.type === 'text_delta')
      .map((d) => d.delta.text)
      .join('');
    expect(text).toBe(FAKE_PREAMBLE);
  });

  it('Chat Completions: content deltas, then tool_calls', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: 'm', stream: true, messages: [{ role: 'user', content: 'TEXT-THEN-TOOL' }], tools: [{ type: 'function', function: { name: 'bash' } }] },
      openaiKey,
    );
    const chunks = await chunksOf(res);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe(FAKE_PREAMBLE);
    expect(chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? [])[0]).toMatchObject({ function: { name: 'bash' } });
  });

  it('Responses: a message item at output_index 0, the function call at 1', async () => {
    const events = await eventsOf(
      await post('/v1/responses', { model: 'm', stream: true, input: [{ role: 'user', content: 'TEXT-THEN-TOOL go' }] }, openaiKey),
    );
    const items = events.filter((e) => e.type === 'response.output_item.done').map((e) => [e.output_index, e.item.type]);
    expect(items).toEqual([
      [0, 'message'],
      [1, 'function_call'],
    ]);
    expect(events.find((e) => e.type === 'response.output_text.done')!.text).toBe(FAKE_PREAMBLE);
    expect(events.find((e) => e.type === 'response.completed')!.response.output).toHaveLength(2);
  });
});

describe('fake LLM: the shell tool is the one the request offers', () => {
  it("Chat Completions: Qwen Code's run_shell_command when that is offered, bash otherwise", async () => {
    const call = async (tools: string[]) => {
      const res = await post(
        '/v1/chat/completions',
        { model: 'm', messages: [{ role: 'user', content: 'RUN-TOOL' }], tools: tools.map((name) => ({ type: 'function', function: { name } })) },
        openaiKey,
      );
      return ((await res.json()) as any).choices[0].message.tool_calls[0].function.name as string;
    };
    expect(await call(['read_file', 'run_shell_command'])).toBe('run_shell_command');
    expect(await call(['bash', 'run_shell_command'])).toBe('bash');
    expect(await call(['something_else'])).toBe('bash');
  });

  it('ASK-TOOL: a command that writes a file first', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: 'm', messages: [{ role: 'user', content: 'ASK-TOOL' }], tools: [{ type: 'function', function: { name: 'bash' } }] },
      openaiKey,
    );
    const args = JSON.parse(((await res.json()) as any).choices[0].message.tool_calls[0].function.arguments);
    expect(args.command).toBe(FAKE_ASKING_COMMAND);
  });
});

describe('fake LLM: Gemini API', () => {
  const gemini = (model: string, method: string, body: unknown, key = 'fake-key') =>
    fetch(`${llm.url}/v1beta/models/${model}:${method}${method === 'streamGenerateContent' ? '?alt=sse' : ''}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
      body: JSON.stringify(body),
    });
  const tools = [{ functionDeclarations: [{ name: 'read_file' }, { name: 'run_shell_command' }] }];

  it("streams text in several chunks, the last with finishReason and usage; Gemini CLI's <session_context> part is not the prompt", async () => {
    const res = await gemini('fake-model', 'streamGenerateContent', {
      contents: [{ role: 'user', parts: [{ text: '<session_context>\nThis is the Gemini CLI.\n</session_context>' }, { text: 'hello gemini' }] }],
      tools,
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const chunks = parseSse(await res.text()).map((e) => JSON.parse(e.data) as any);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((c) => c.candidates[0].content.parts[0].text).join('')).toBe('FAKE-LLM-REPLY: hello gemini');
    expect(chunks.at(-1)).toMatchObject({
      candidates: [{ finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 20 },
      modelVersion: 'fake-model',
    });
  });

  it('RUN-TOOL: a run_shell_command function call, then the answer once a functionResponse is in', async () => {
    const first = parseSse(
      await (await gemini('m', 'streamGenerateContent', { contents: [{ role: 'user', parts: [{ text: 'RUN-TOOL go' }] }], tools })).text(),
    );
    const part = JSON.parse(first.at(-1)!.data).candidates[0].content.parts[0];
    expect(part).toEqual({ functionCall: { name: 'run_shell_command', args: { command: FAKE_TOOL_COMMAND, description: expect.any(String) } } });
    const res = await gemini('m', 'generateContent', {
      contents: [
        { role: 'user', parts: [{ text: 'RUN-TOOL go' }] },
        { role: 'model', parts: [part] },
        { role: 'user', parts: [{ functionResponse: { name: 'run_shell_command', response: { output: 'FAKE-TOOL-OUTPUT' } } }] },
      ],
      tools,
    });
    expect(((await res.json()) as any).candidates[0].content.parts[0].text).toBe('FAKE-LLM-REPLY: RUN-TOOL go');
  });

  it('a JSON-mode call (the model router) gets the smallest object its schema accepts; countTokens answers', async () => {
    const schema = {
      type: 'object',
      properties: { complexity_reasoning: { type: 'string' }, complexity_score: { type: 'integer' }, choice: { type: 'string', enum: ['flash', 'pro'] } },
      required: ['complexity_reasoning', 'complexity_score', 'choice'],
    };
    const res = await gemini('flash-lite', 'generateContent', {
      contents: [{ role: 'user', parts: [{ text: 'route me' }] }],
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: schema },
    });
    expect(JSON.parse(((await res.json()) as any).candidates[0].content.parts[0].text)).toEqual({
      complexity_reasoning: 'fake',
      complexity_score: 1,
      choice: 'flash',
    });
    expect(await (await gemini('m', 'countTokens', { contents: [] })).json()).toEqual({ totalTokens: 100 });
  });

  it("a bad key gets Google's 400 API_KEY_INVALID", async () => {
    const res = await gemini('m', 'generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, 'wrong-key');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] } });
  });
});
