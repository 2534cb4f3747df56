#!/usr/bin/env node
// The permission-prompt tool of service's chat approvals: a stdio MCP server (JSON-RPC 2.0, one
// message per line) that Claude Code starts from its --mcp-config and calls through
// `--permission-prompt-tool mcp__service_approvals__ask` whenever a tool needs permission.
//
// Each call {tool_name, input, tool_use_id} is forwarded to the gateway's approval endpoint
// ($SERVICE_APPROVAL_URL, with the turn's secret $SERVICE_APPROVAL_TOKEN), which asks the person and
// answers {allow, message}. The tool result is Claude Code's permission decision as JSON text:
// {"behavior":"allow","updatedInput":<input>} or {"behavior":"deny","message":"…"}. Anything that
// goes wrong (no endpoint, the gateway gone, a malformed answer) denies: a tool never runs unapproved.
// A call Claude Code cancels (notifications/cancelled) closes its request, which withdraws it.
//
// Plain JavaScript without dependencies, so the same file serves the built package and the sources.
import http from 'node:http';
import readline from 'node:readline';

const TOOL = 'ask';
const url = process.env.SERVICE_APPROVAL_URL;
const token = process.env.SERVICE_APPROVAL_TOKEN;
/** Calls waiting for the person, by JSON-RPC id: their HTTP requests, to cancel. */
const inFlight = new Map();

const write = (msg) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
const decision = (d) => ({ content: [{ type: 'text', text: JSON.stringify(d) }] });
const deny = (message) => decision({ behavior: 'deny', message });

function ask(id, args) {
  return new Promise((resolve) => {
    if (!url || !token) return resolve({ allow: false, message: 'No approval channel for this turn; the tool call was denied.' });
    const body = JSON.stringify({ tool_name: String(args.tool_name ?? 'tool'), input: args.input ?? {}, tool_use_id: args.tool_use_id });
    const req = http.request(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        try {
          const answer = JSON.parse(text);
          if (res.statusCode === 200 && typeof answer.allow === 'boolean') return resolve(answer);
        } catch {
          // denied below
        }
        resolve({ allow: false, message: `The approval endpoint refused the request (HTTP ${res.statusCode}); the tool call was denied.` });
      });
      res.on('error', () => resolve({ allow: false, message: 'The approval was cut off; the tool call was denied.' }));
    });
    req.on('error', (err) =>
      resolve({ allow: false, message: `Could not reach the approval endpoint (${err.code ?? err.message}); the tool call was denied.` }),
    );
    inFlight.set(id, req);
    req.end(body);
  }).finally(() => inFlight.delete(id));
}

async function call(msg) {
  const params = msg.params ?? {};
  if (params.name !== TOOL) return write({ id: msg.id, error: { code: -32602, message: `Unknown tool: ${params.name}` } });
  const args = params.arguments ?? {};
  const answer = await ask(msg.id, args);
  const input = args.input !== null && typeof args.input === 'object' && !Array.isArray(args.input) ? args.input : {};
  write({ id: msg.id, result: answer.allow ? decision({ behavior: 'allow', updatedInput: input }) : deny(String(answer.message ?? 'Denied.')) });
}

function onMessage(msg) {
  const isRequest = msg.id !== undefined && msg.id !== null;
  switch (msg.method) {
    case 'initialize':
      return write({
        id: msg.id,
        result: {
          // Only tools/list and tools/call are used, which every protocol version has: the client's version is accepted.
          protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'service-approvals', version: '1.0.0' },
        },
      });
    case 'ping':
      return write({ id: msg.id, result: {} });
    case 'tools/list':
      return write({
        id: msg.id,
        result: {
          tools: [
            {
              name: TOOL,
              description: 'Asks the person chatting with this assistant whether a tool call may run.',
              inputSchema: {
                type: 'object',
                properties: { tool_name: { type: 'string' }, input: { type: 'object' }, tool_use_id: { type: 'string' } },
                required: ['tool_name', 'input'],
              },
            },
          ],
        },
      });
    case 'tools/call':
      return void call(msg);
    case 'notifications/cancelled':
      inFlight.get(msg.params?.requestId)?.destroy();
      return;
    default:
      if (isRequest) write({ id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } });
  }
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return write({ id: null, error: { code: -32700, message: 'Parse error' } });
  }
  if (msg && typeof msg === 'object') onMessage(msg);
});
// Claude Code closes stdin when it is done with us; requests still waiting are abandoned (and withdrawn).
rl.on('close', () => {
  for (const req of inFlight.values()) req.destroy();
  process.exit(0);
});
