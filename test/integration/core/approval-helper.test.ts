import { type ChildProcess, spawn } from 'node:child_process';
import readline from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { APPROVAL_HELPER_SCRIPT, APPROVAL_TOKEN_VAR, APPROVAL_URL_VAR, createApprovalBroker } from '../../../src/core/approvals/approval-broker.js';
import type { ApprovalAsk, ApprovalVerdict } from '../../../src/core/approvals/approvals.js';
import { until } from '../../helpers/wait.js';

/**
 * The permission-prompt MCP server (bin/approval-mcp.mjs) as Claude Code runs it: a real process
 * spoken to over stdio, forwarding to a real broker endpoint on 127.0.0.1.
 */
interface Mcp {
  request(method: string, params?: unknown): Promise<Record<string, unknown>>;
  notify(method: string, params?: unknown): void;
  child: ChildProcess;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

function startHelper(env: Record<string, string>): Mcp {
  const child = spawn(process.execPath, [APPROVAL_HELPER_SCRIPT], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const waiting = new Map<number | string, (msg: Record<string, unknown>) => void>();
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    const msg = JSON.parse(line) as Record<string, unknown>;
    waiting.get(msg.id as number)?.(msg);
  });
  let next = 1;
  return {
    child,
    request(method, params) {
      const id = next++;
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      });
    },
    notify(method, params) {
      child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', method, params })}\n`);
    },
  };
}

const decisionOf = (reply: Record<string, unknown>) => {
  const content = (reply.result as { content: Array<{ type: string; text: string }> }).content;
  expect(content[0]!.type).toBe('text');
  return JSON.parse(content[0]!.text) as Record<string, unknown>;
};

async function handshake(mcp: Mcp) {
  const init = await mcp.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '0' } });
  expect(init.result).toMatchObject({ protocolVersion: '2025-11-25', capabilities: { tools: {} } });
  mcp.notify('notifications/initialized');
  const list = await mcp.request('tools/list');
  expect((list.result as { tools: Array<{ name: string }> }).tools.map((t) => t.name)).toEqual(['ask']);
}

describe('the permission-prompt MCP helper and the broker endpoint', () => {
  it("forwards a call to the turn's ask and answers Claude Code's allow (with the input) or deny (with the reason)", async () => {
    const broker = createApprovalBroker();
    const asked: ApprovalAsk[] = [];
    const answers: ApprovalVerdict[] = [
      { allow: true, message: 'ok' },
      { allow: false, message: 'The person denied this Bash call.' },
    ];
    const endpoint = await broker.open(async (req) => {
      asked.push(req);
      return answers.shift()!;
    });
    const mcp = startHelper({ [APPROVAL_URL_VAR]: endpoint.url, [APPROVAL_TOKEN_VAR]: endpoint.token });
    await handshake(mcp);
    const input = { command: 'echo hi > x', description: 'write' };
    const allowed = await mcp.request('tools/call', { name: 'ask', arguments: { tool_name: 'Bash', input, tool_use_id: 'toolu_1' } });
    expect(decisionOf(allowed)).toEqual({ behavior: 'allow', updatedInput: input });
    const denied = await mcp.request('tools/call', { name: 'ask', arguments: { tool_name: 'Bash', input } });
    expect(decisionOf(denied)).toEqual({ behavior: 'deny', message: 'The person denied this Bash call.' });
    expect(asked.map((a) => [a.tool, a.input])).toEqual([
      ['Bash', input],
      ['Bash', input],
    ]);
    endpoint.close();
  });

  it('a call Claude Code cancels withdraws the request (the ask sees its signal abort)', async () => {
    const broker = createApprovalBroker();
    let seen: ApprovalAsk | undefined;
    const endpoint = await broker.open(
      (req) =>
        new Promise<ApprovalVerdict>((resolve) => {
          seen = req;
          req.signal?.addEventListener('abort', () => resolve({ allow: false, message: 'withdrawn' }));
        }),
    );
    const mcp = startHelper({ [APPROVAL_URL_VAR]: endpoint.url, [APPROVAL_TOKEN_VAR]: endpoint.token });
    await handshake(mcp);
    const reply = mcp.request('tools/call', { name: 'ask', arguments: { tool_name: 'Write', input: { file_path: '/x' } } });
    await until(() => seen !== undefined, undefined, 'the request to reach the broker');
    mcp.notify('notifications/cancelled', { requestId: 3, reason: 'timed out' });
    await until(() => seen?.signal?.aborted === true, undefined, 'the request to be withdrawn');
    expect(decisionOf(await reply)).toMatchObject({ behavior: 'deny' });
    endpoint.close();
  });

  it('denies when the turn is over (its secret revoked), when there is no endpoint, and on a wrong secret', async () => {
    const broker = createApprovalBroker();
    const endpoint = await broker.open(async () => ({ allow: true, message: 'ok' }));
    const keep = await broker.open(async () => ({ allow: true, message: 'ok' }));
    endpoint.close();
    const args = { name: 'ask', arguments: { tool_name: 'Bash', input: { command: 'x' } } };

    const revoked = startHelper({ [APPROVAL_URL_VAR]: endpoint.url, [APPROVAL_TOKEN_VAR]: endpoint.token });
    await handshake(revoked);
    expect(decisionOf(await revoked.request('tools/call', args))).toMatchObject({ behavior: 'deny', message: expect.stringMatching(/HTTP 401/) });

    const wrong = startHelper({ [APPROVAL_URL_VAR]: keep.url, [APPROVAL_TOKEN_VAR]: 'f'.repeat(64) });
    await handshake(wrong);
    expect(decisionOf(await wrong.request('tools/call', args))).toMatchObject({ behavior: 'deny' });

    const none = startHelper({});
    await handshake(none);
    expect(decisionOf(await none.request('tools/call', args))).toMatchObject({ behavior: 'deny', message: expect.stringMatching(/no approval channel/i) });
    keep.close();
  });

  it('unknown methods get -32601, an unknown tool -32602; the helper exits when stdin closes', async () => {
    const mcp = startHelper({});
    await handshake(mcp);
    expect(((await mcp.request('resources/list')).error as { code: number }).code).toBe(-32601);
    expect(((await mcp.request('tools/call', { name: 'other', arguments: {} })).error as { code: number }).code).toBe(-32602);
    const exited = new Promise<number | null>((r) => mcp.child.once('exit', (code) => r(code)));
    mcp.child.stdin!.end();
    expect(await exited).toBe(0);
  });

  it('the endpoint listens only while a turn has it open', async () => {
    const broker = createApprovalBroker();
    const a = await broker.open(async () => ({ allow: true, message: '' }));
    const b = await broker.open(async () => ({ allow: true, message: '' }));
    expect(b.url).toBe(a.url);
    a.close();
    expect((await fetch(b.url, { method: 'POST', headers: { authorization: `Bearer ${b.token}` }, body: '{"tool_name":"x","input":{}}' })).status).toBe(200);
    b.close();
    await until(
      async () =>
        await fetch(b.url, { method: 'POST' }).then(
          () => false,
          () => true,
        ),
      undefined,
      'the port to close',
    );
  });
});
