#!/usr/bin/env node
// A stand-in ACP agent (Agent Client Protocol v1: JSON-RPC 2.0, one message per line on stdin/stdout),
// for the protocol's edge cases that the real agents do not produce on demand. Sessions are kept in
// $STANDIN_STATE_DIR (or $HOME/.standin) like the stand-in engine's, so a session survives between runs.
//
// Flags: --resume-capability  advertise sessionCapabilities.resume (session/resume, no replay)
//        --no-load            advertise neither load nor resume
//        --replay-after-answer  answer session/load first and replay the history after it (Gemini CLI 0.61)
//        --protocol <n>       answer initialize with this protocol version
//        --need-auth          session/new fails with auth_required until `authenticate` was called
//
// Directives in the prompt:
//   TOOL:<name>   a tool call (pending, then in_progress with rawInput, then completed with text content)
//   ASK           ask session/request_permission before a tool call; the answer decides whether it runs
//   STOP-ON-DENY  with ASK: a rejected tool ends the turn at once, without a word (Qwen Code 0.24 does)
//   FS            call fs/read_text_file on the client (which offers no file system: expects an error)
//   UNKNOWN-REQUEST  call a method the client does not know (expects -32601)
//   SLEEP:<ms>    wait before answering; a session/cancel ends the wait with stopReason cancelled
//   HANG          never answer (cancel still answers, unless IGNORE-CANCEL)
//   IGNORE-CANCEL do not react to session/cancel
//   GRANDCHILD    start a `sleep` grandchild, then hang
//   CRASH         exit 3 after writing to stderr, without answering
//   FAIL:<text>   answer the prompt with a JSON-RPC error carrying <text>
//   REFUSE        answer with stopReason refusal
//   LINGER        after answering, ignore the end of stdin and stay alive
//   QUIT-ON-NEXT  answer, then exit 0 without a word when the next prompt comes (an engine on its way out)
//   QUIT-AFTER    answer, then exit 0 (a program that ignores being kept resident)
//   SAY:<text>    answer exactly <text>
// Otherwise the answer is `ECHO: <first line of the prompt>` and `TURN: <n>` (n-th prompt of the session),
// sent in chunks, with a usage _meta on the last chunk.
//
// STANDIN_LOG=<file>: one JSON line per run ({engine:"acp", argv, env subset, ...}) and one per message received.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const argv = process.argv.slice(2);
const opt = (name) => argv.includes(name);
const protocol = argv.includes('--protocol') ? Number(argv[argv.indexOf('--protocol') + 1]) : 1;
const stateDir = process.env.STANDIN_STATE_DIR || path.join(process.env.HOME || '/tmp', '.standin');
fs.mkdirSync(path.join(stateDir, 'acp'), { recursive: true });
const sessionFile = (id) => path.join(stateDir, 'acp', `${String(id).replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
const log = (entry) => process.env.STANDIN_LOG && fs.appendFileSync(process.env.STANDIN_LOG, `${JSON.stringify(entry)}\n`);
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(GEMINI|GOOGLE|OPENAI|QWEN|AGENT_)/.test(k)));
log({ engine: 'acp', pid: process.pid, argv, cwd: process.cwd(), env, startedAt: Date.now() });

const write = (msg) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
const update = (sessionId, u) => write({ method: 'session/update', params: { sessionId, update: u } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let authenticated = false;
let lingering = false;
let quitOnNext = false;
let nextId = 1000;
const waiting = new Map();
/** Requests to the client: resolved with its answer. */
const ask = (method, params) =>
  new Promise((resolve) => {
    const id = nextId++;
    waiting.set(id, resolve);
    write({ id, method, params });
  });
const cancels = new Map();

const history = (id) => (fs.existsSync(sessionFile(id)) ? JSON.parse(fs.readFileSync(sessionFile(id), 'utf8')) : undefined);
const modes = {
  currentModeId: 'default',
  availableModes: [
    { id: 'default', name: 'Default' },
    { id: 'yolo', name: 'YOLO' },
  ],
};
const models = {
  currentModelId: 'standin-small',
  availableModels: [
    { modelId: 'standin-small', name: 'small' },
    { modelId: 'standin-large', name: 'large' },
  ],
};

/** The history as updates; after the answer it trickles (20 ms apart), overlapping the client's next requests. */
async function replay(id, turns, late) {
  for (const t of turns) {
    update(id, { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: t.prompt } });
    if (late) await sleep(20);
    update(id, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: t.answer } });
    await sleep(late ? 20 : 5);
  }
}

async function prompt(id, sessionId, text) {
  const turns = history(sessionId) ?? [];
  const has = (d) => text.includes(d);
  const arg = (d) => new RegExp(`${d}:(\\S+)`).exec(text)?.[1];
  let cancelled = false;
  const cancelWait = new Promise((resolve) => {
    cancels.set(sessionId, () => {
      if (has('IGNORE-CANCEL')) return;
      cancelled = true;
      resolve();
    });
  });
  if (quitOnNext) process.exit(0);
  if (has('QUIT-ON-NEXT')) quitOnNext = true;
  if (has('CRASH')) {
    process.stderr.write('acp stand-in: simulated crash\n');
    process.exit(3);
  }
  if (has('GRANDCHILD')) {
    const child = spawn('sleep', ['300'], { stdio: 'ignore' });
    log({ grandchild: child.pid, parent: process.pid });
  }
  if (has('HANG') || has('GRANDCHILD')) await cancelWait;
  if (arg('SLEEP')) await Promise.race([sleep(Number(arg('SLEEP'))), cancelWait]);
  if (cancelled) return write({ id, result: { stopReason: 'cancelled' } });
  if (has('FAIL:'))
    return write({
      id,
      error: {
        code: -32603,
        message: 'Internal error',
        data: {
          details: text
            .slice(text.indexOf('FAIL:') + 5)
            .split('\n')[0]
            .trim(),
        },
      },
    });
  if (has('REFUSE')) return write({ id, result: { stopReason: 'refusal' } });
  if (has('FS')) {
    const r = await ask('fs/read_text_file', { sessionId, path: path.join(process.cwd(), 'x.txt') });
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `FS: ${r.error ? r.error.message : 'read'}\n` } });
  }
  if (has('UNKNOWN-REQUEST')) {
    const r = await ask('_standin/ping', { sessionId });
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `UNKNOWN: ${r.error ? r.error.code : 'answered'}\n` } });
  }
  const tool = arg('TOOL') ?? (has('ASK') ? 'shell' : undefined);
  if (tool) {
    const toolCallId = `call_${randomUUID().slice(0, 8)}`;
    update(sessionId, { sessionUpdate: 'tool_call', toolCallId, title: tool, kind: 'execute', status: 'pending', rawInput: {} });
    let allowed = true;
    if (has('ASK')) {
      const r = await ask('session/request_permission', {
        sessionId,
        toolCall: { toolCallId, title: `${tool}: echo hi`, kind: 'execute' },
        options: [
          { optionId: 'proceed_always', name: 'Always', kind: 'allow_always' },
          { optionId: 'proceed_once', name: 'Once', kind: 'allow_once' },
          { optionId: 'cancel', name: 'No', kind: 'reject_once' },
        ],
      });
      const outcome = r.result?.outcome;
      allowed = outcome?.outcome === 'selected' && outcome.optionId.startsWith('proceed');
      if (!allowed && has('STOP-ON-DENY')) {
        update(sessionId, { sessionUpdate: 'tool_call_update', toolCallId, status: 'failed', content: [] });
        return write({ id, result: { stopReason: 'end_turn' } });
      }
      update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `PERMISSION: ${outcome?.optionId ?? outcome?.outcome}\n` } });
    }
    if (allowed) {
      update(sessionId, { sessionUpdate: 'tool_call_update', toolCallId, status: 'in_progress', rawInput: { command: 'echo hi' } });
      update(sessionId, {
        sessionUpdate: 'tool_call_update',
        toolCallId,
        status: 'completed',
        content: [{ type: 'content', content: { type: 'text', text: 'hi' } }],
      });
    } else {
      update(sessionId, {
        sessionUpdate: 'tool_call_update',
        toolCallId,
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'denied by the user' } }],
      });
    }
  }
  const answer = has('SAY:')
    ? text
        .slice(text.lastIndexOf('SAY:') + 4)
        .split('\n')[0]
        .trim()
    : `ECHO: ${text.split('\n')[0]}\nTURN: ${turns.length + 1}`;
  const pieces = answer.match(/[\s\S]{1,10}/g) ?? [];
  for (const [i, p] of pieces.entries()) {
    update(sessionId, {
      sessionUpdate: 'agent_message_chunk',
      content: { type: 'text', text: p },
      ...(i === pieces.length - 1 ? { _meta: { usage: { inputTokens: 10, outputTokens: 5 } } } : {}),
    });
  }
  fs.writeFileSync(sessionFile(sessionId), JSON.stringify([...turns, { prompt: text, answer }]));
  if (has('LINGER')) lingering = true;
  write({ id, result: { stopReason: 'end_turn' } });
  if (has('QUIT-AFTER')) process.exit(0);
}

async function handle(msg) {
  log({ received: msg });
  if (msg.method === undefined) {
    waiting.get(msg.id)?.(msg);
    waiting.delete(msg.id);
    return;
  }
  const { id, method, params = {} } = msg;
  switch (method) {
    case 'initialize':
      return write({
        id,
        result: {
          protocolVersion: protocol,
          agentCapabilities: {
            loadSession: !opt('--no-load'),
            ...(opt('--resume-capability') ? { sessionCapabilities: { resume: {} } } : {}),
            promptCapabilities: { image: false, audio: false, embeddedContext: false },
          },
          authMethods: [{ id: 'standin-key', name: 'Stand-in key' }],
        },
      });
    case 'authenticate':
      authenticated = params.methodId === 'standin-key';
      return write(authenticated ? { id, result: {} } : { id, error: { code: -32602, message: `unknown auth method ${params.methodId}` } });
    case 'session/new': {
      if (opt('--need-auth') && !authenticated) return write({ id, error: { code: -32000, message: 'Authentication required' } });
      const sessionId = randomUUID();
      fs.writeFileSync(sessionFile(sessionId), '[]');
      return write({ id, result: { sessionId, modes, models } });
    }
    case 'session/load':
    case 'session/resume': {
      const turns = history(params.sessionId);
      if (!turns) return write({ id, error: { code: -32002, message: `Resource not found: session:${params.sessionId}` } });
      if (method === 'session/load' && !opt('--replay-after-answer')) await replay(params.sessionId, turns, false);
      write({ id, result: { modes, models } });
      if (method === 'session/load' && opt('--replay-after-answer')) await replay(params.sessionId, turns, true);
      return;
    }
    case 'session/set_mode':
    case 'session/set_model':
      return write({ id, result: {} });
    case 'session/prompt':
      return prompt(id, params.sessionId, (params.prompt ?? []).map((b) => b.text ?? '').join(''));
    case 'session/cancel':
      return cancels.get(params.sessionId)?.();
    default:
      if (id !== undefined) write({ id, error: { code: -32601, message: `Method not found: ${method}` } });
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
  void handle(msg);
});
rl.on('close', () => {
  if (lingering) setInterval(() => {}, 1000);
  else process.exit(0);
});
