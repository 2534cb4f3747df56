import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { poll } from '../../helpers/wait.js';

/**
 * Chat approvals over HTTP: the /chat stream carries `approval_request` (an extension of the
 * spec's StreamEvent table) and `POST /approve {sessionKey, id, decision}` answers it. Real
 * sockets, the stand-in engine_b asking through our MCP helper.
 */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

/** Read an SSE response event by event while it streams. */
function readEvents(res: Response) {
  const events: Array<Record<string, unknown>> = [];
  const done = (async () => {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { done: end, value } = await reader.read();
      if (end) break;
      buffer += value;
      let cut = buffer.indexOf('\n\n');
      while (cut >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (block.startsWith('data: ')) events.push(JSON.parse(block.slice(6)) as Record<string, unknown>);
        cut = buffer.indexOf('\n\n');
      }
    }
    return events;
  })();
  const approval = poll(() => events.find((e) => e.type === 'approval_request'), undefined, 'approval_request on /chat');
  return { events, done, approval };
}

const ASK = 'ASK:echo done > HTTP-SIDE-EFFECT.txt';

describe('POST /approve answers the approval_request of a /chat stream', () => {
  it('allow: the stream goes on, the command ran; the answer names what was allowed', async () => {
    s = await startTestServer({ yaml: 'skipPermissions: false\n' });
    const turn = readEvents(await s.api('/chat', { json: { message: ASK, sessionKey: 'web' } }));
    const req = await turn.approval;
    expect(req).toEqual({
      type: 'approval_request',
      id: expect.stringMatching(/^[a-z0-9]+$/),
      tool: 'Bash',
      summary: 'echo done > HTTP-SIDE-EFFECT.txt',
      detail: 'echo done > HTTP-SIDE-EFFECT.txt',
      cut: false,
    });
    const res = await s.api('/approve', { json: { sessionKey: 'web', id: req.id, decision: 'allow' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, id: req.id, decision: 'allow', tool: 'Bash', summary: 'echo done > HTTP-SIDE-EFFECT.txt' });
    const events = await turn.done;
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: 'ALLOWED' });
    expect(fs.existsSync(path.join(s.dir, 'HTTP-SIDE-EFFECT.txt'))).toBe(true);
  });

  it('deny: the command does not run; the same id again is 404 (already answered)', async () => {
    s = await startTestServer({ yaml: 'skipPermissions: false\n' });
    const turn = readEvents(await s.api('/chat', { json: { message: ASK } }));
    const req = await turn.approval;
    // sessionKey defaults to "default", as on /chat and /abort.
    expect((await s.api('/approve', { json: { id: req.id, decision: 'deny' } })).status).toBe(200);
    const events = await turn.done;
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: expect.stringMatching(/^DENIED/) });
    expect(fs.existsSync(path.join(s.dir, 'HTTP-SIDE-EFFECT.txt'))).toBe(false);
    const again = await s.api('/approve', { json: { id: req.id, decision: 'allow' } });
    expect(again.status).toBe(404);
    expect(await again.json()).toEqual({ error: `no approval ${req.id} is waiting on session "default" (it may have been answered or timed out)` });
  });

  it('an id of another session is 404; the request keeps waiting for its own session', async () => {
    s = await startTestServer({ yaml: 'skipPermissions: false\n' });
    const turn = readEvents(await s.api('/chat', { json: { message: ASK, sessionKey: 'mine' } }));
    const req = await turn.approval;
    expect((await s.api('/approve', { json: { sessionKey: 'other', id: req.id, decision: 'allow' } })).status).toBe(404);
    expect((await s.api('/approve', { json: { sessionKey: 'mine', id: req.id, decision: 'allow_always' } })).status).toBe(200);
    expect((await turn.done).at(-1)).toMatchObject({ finalText: 'ALLOWED' });
  });

  it('validation: id and decision required, decision one of allow|deny|allow_always, unknown fields refused; the token is required', async () => {
    s = await startTestServer();
    for (const body of [
      { sessionKey: 'k', decision: 'allow' },
      { id: 'x' },
      { id: 'x', decision: 'yes' },
      { id: 'x', decision: 'allow', extra: 1 },
      { id: '', decision: 'allow' },
    ]) {
      const res = await s.api('/approve', { json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.json()).toMatchObject({ error: expect.stringMatching(/^invalid request body/), issues: expect.any(Array) });
    }
    const anonymous = await fetch(`${s.url}/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"id":"x","decision":"allow"}',
    });
    expect(anonymous.status).toBe(401);
    expect((await s.api('/approve', { method: 'GET' })).status).toBe(405);
  });
});
