#!/usr/bin/env node
// A stand-in for the headless engine CLIs. Invoked as `stand-in-engine.mjs <engine_x> <argv of the
// real CLI...>` through a wrapper named like the real binary (claude, opencode, codex, agent, gemini,
// qwen), it
// reads the prompt where the real CLI does, keeps sessions like the real CLI (resume of an
// unknown id fails the real CLI's way), and prints the real CLI's output format.
//
// Directives anywhere in the prompt:
//   SLEEP:<ms>     wait before answering          HANG           never finish
//   GRANDCHILD     start a `sleep` grandchild, then hang
//   SETSID-CHILD   start a `sleep` in its own session, then hang (with THEN-ANSWER: answer, once the GATE:<file>
//                  below exists when one is given: the test writes it when the runner has seen the `sleep`)
//   FAIL:<text>    engine-reported failure         PROVIDER-ERROR  a 401 from the model provider
//   TEXT-THEN-FAIL:<text>  stream `Before the failure.`, then an engine-reported failure with <text>
//   CRASH          exit 3 with only stderr         STDERR-FLOOD    1 MB of stderr, then answer
//   BIG-LINE       a 500 KB tool-result line       TOOL:<name>     a tool call before the answer
//   SAY:<text>     answer exactly <text> (the last SAY: of the prompt, to the end of its line)
//   EMPTY          answer with no text             PARAGRAPHS      three paragraphs around a tool call
//   TEXT-THEN-TOOL `Let me look that up.` and a tool call before the answer (combines with SAY: etc.)
//   ECHO-PROMPT    answer with the whole prompt       LONG:<n>        about n characters of paragraphs (LONGCJK:<n> in Chinese)
//   PAUSED-PARAGRAPHS:<dir>  `Paragraph one.`, `Paragraph two.`, `Paragraph three.`, each after the gate file
//                  <dir>/<n> of the one before exists (relative to the cwd): a reply that grows in three steps
//   GATE:<file>    stream `Before the gate.` first, then wait until <file> exists (relative to the cwd) before the
//                  rest of the turn: a reply seen growing, or a slow turn to stop, without a timed sleep
//   REPLY-FILE:<file>  answer with the text of <file> (relative to the cwd): a reply of several lines (Markdown)
//   MAKE-FILE:<name>:<bytes>     write a file of <bytes> bytes into $SERVICE_OUTBOX (the turn's outbox)
//   MAKE-LINK:<name>:<target>    a symbolic link in the outbox      MAKE-DIR:<name>  a folder in the outbox
//   MAKE-SPARSE:<name>:<bytes>   a sparse file of <bytes> bytes in the outbox (a size past a limit, no disk written)
//   ASK:<command>  engine_b only: a Bash tool call of <command> (to the end of the line) that needs permission,
//                  asked the way Claude Code asks: with --permission-prompt-tool mcp__<server>__<tool>, the
//                  stand-in starts <server> from the --mcp-config file, calls <tool> over MCP and runs the
//                  command (sh -c, in its cwd) only on {"behavior":"allow"}; without the flag it is denied.
//                  The answer then says `ALLOWED` or `DENIED: <message>`. ASK2:<command> asks a second time.
//                  ASK-B64:<base64> asks for the command the base64 (UTF-8) decodes to: newlines, zero-width characters…
//   RUN-SH:<command>  run <command> (sh -c, in its cwd, to the end of the line) without asking, as an engine
//                  with skipPermissions does, reported as a Bash tool call; RUN-SH-B64:<base64> the same, decoded
//   REPLAY:<scenario>            print the recorded run test/fixtures/<engine>/<scenario> (its stdout, its
//                                stderr, its exit code) instead of answering: real output through the real parser
//   REPLAY-ON-RESUME:<scenario>  the same, but only when asked to resume a session (whether or not it
//                                exists); a fresh run answers as usual (the resume fallback's retry)
// Otherwise the answer is `ECHO: <first line of the prompt>` and `TURN: <n>` (n-th turn of the session).
//
// STANDIN_LOG=<file>: one JSON line per run (engine, pid, argv, prompt, sessions, env subset).
// Sessions live in $STANDIN_STATE_DIR or $HOME/.standin.
import { execSync, spawn } from 'node:child_process';
import readline from 'node:readline';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [engine, ...argv] = process.argv.slice(2);

// The resident (warm) modes of the real CLIs are not stood in for: started that way the stand-in
// exits at once, as an engine whose resident mode fails to start, and the turn runs per turn.
// Warm engines are tested with the real CLIs (test/e2e/warm-*.test.ts) and the stand-in ACP agent.
const RESIDENT = { engine_b: '--input-format', engine_c: 'acp', engine_d: 'app-server', engine_e: '--acp', engine_f: '--acp' };
if (RESIDENT[engine] && argv.includes(RESIDENT[engine])) {
  process.stderr.write(`stand-in ${engine}: no resident mode\n`);
  process.exit(2);
}
const out = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const stateDir = process.env.STANDIN_STATE_DIR || path.join(process.env.HOME || '/tmp', '.standin');
fs.mkdirSync(path.join(stateDir, 'sessions'), { recursive: true });
const sessionFile = (id) => path.join(stateDir, 'sessions', `${id.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);

const readStdin = () =>
  new Promise((resolve) => {
    if (process.stdin.isTTY) return resolve('');
    let data = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d) => (data += d));
    process.stdin.on('end', () => resolve(data));
    process.stdin.on('error', () => resolve(data));
  });

const flag = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};

async function parseInvocation() {
  if (engine === 'engine_b' || engine === 'engine_e' || engine === 'engine_f') return { prompt: await readStdin(), resume: flag('--resume') };
  if (engine === 'engine_c') {
    const command = flag('--command');
    if (command) {
      const args = argv.slice(argv.indexOf('--command') + 2).join(' ');
      return { prompt: `/${command} ${args}`.trim(), resume: flag('--session'), command };
    }
    return { prompt: await readStdin(), resume: flag('--session') };
  }
  if (engine === 'engine_d') {
    const prompt = argv[argv.length - 1] === '-' ? await readStdin() : argv[argv.length - 1];
    const i = argv.indexOf('resume');
    return { prompt, resume: i >= 0 ? argv[argv.length - 2] : undefined };
  }
  return { prompt: argv[argv.length - 1], resume: flag('--resume') };
}

function notFound(id) {
  const messages = {
    engine_b: () => {
      out({
        type: 'result',
        subtype: 'error_during_execution',
        is_error: true,
        num_turns: 0,
        session_id: id,
        total_cost_usd: 0,
        errors: [`No conversation found with session ID: ${id}`],
      });
      process.stderr.write(`No conversation found with session ID: ${id}\n`);
    },
    engine_c: () => process.stderr.write('\x1b[91m\x1b[1mError: \x1b[0mSession not found\n'),
    engine_d: () => process.stderr.write(`Error: thread/resume: thread/resume failed: no rollout found for thread id ${id} (code -32600)\n`),
    engine_a: () => process.stderr.write(`Error: chat ${id} not found\n`),
    engine_e: () => {
      process.stderr.write(`Error resuming session: Invalid session identifier "${id}".\n`);
      process.exit(42);
    },
    engine_f: () => process.stderr.write(`No saved session found with title "${id}".\n`),
  };
  messages[engine]();
  process.exit(1);
}

/** Print a recorded run of this engine exactly as captured, then exit with its exit code. */
async function replayFixture(scenario) {
  const base = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', engine, scenario.replace(/[^A-Za-z0-9_-]/g, ''));
  const meta = JSON.parse(fs.readFileSync(`${base}.meta.json`, 'utf8'));
  await new Promise((r) => process.stdout.write(fs.readFileSync(`${base}.ndjson`, 'utf8'), r));
  await new Promise((r) => process.stderr.write(meta.stderr ?? '', r));
  process.exit(meta.exitCode ?? 1);
}

// --- per-engine output formats ---

function emitter(sessionId) {
  const msgId = () => `msg_${randomUUID().slice(0, 12)}`;
  const call = () => `call_${randomUUID().slice(0, 8)}`;
  const ts = () => Date.now();
  const formats = {
    engine_b: {
      start: () => out({ type: 'system', subtype: 'init', cwd: process.cwd(), session_id: sessionId, tools: ['Bash'], model: 'stand-in' }),
      text: (t) => {
        const id = msgId();
        out({ type: 'stream_event', event: { type: 'message_start', message: { id } }, session_id: sessionId });
        for (const piece of t.match(/[\s\S]{1,12}/g) ?? []) {
          out({ type: 'stream_event', event: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }, session_id: sessionId });
        }
        out({ type: 'assistant', message: { id, role: 'assistant', model: 'stand-in', content: [{ type: 'text', text: t }] }, session_id: sessionId });
      },
      tool: (name, input, output) => {
        const id = call();
        out({
          type: 'assistant',
          message: { id: msgId(), role: 'assistant', model: 'stand-in', content: [{ type: 'tool_use', id, name, input }] },
          session_id: sessionId,
        });
        out({
          type: 'user',
          message: { role: 'user', content: [{ tool_use_id: id, type: 'tool_result', content: output, is_error: false }] },
          session_id: sessionId,
        });
      },
      done: (final) =>
        out({
          type: 'result',
          subtype: 'success',
          is_error: false,
          num_turns: 2,
          result: final,
          session_id: sessionId,
          total_cost_usd: 0.0123,
          usage: { input_tokens: 10, output_tokens: 5 },
        }),
      fail: (message, status) => {
        out({
          type: 'result',
          subtype: 'success',
          is_error: true,
          api_error_status: status ?? null,
          num_turns: 1,
          result: message,
          session_id: sessionId,
          total_cost_usd: 0,
        });
        process.exit(1);
      },
    },
    engine_c: {
      start: () => out({ type: 'step_start', timestamp: ts(), sessionID: sessionId, part: { type: 'step-start' } }),
      text: (t) => out({ type: 'text', timestamp: ts(), sessionID: sessionId, part: { type: 'text', text: t } }),
      tool: (name, input, output) => {
        out({
          type: 'tool_use',
          timestamp: ts(),
          sessionID: sessionId,
          part: { type: 'tool', tool: name, callID: call(), state: { status: 'completed', input, output } },
        });
        out({
          type: 'step_finish',
          timestamp: ts(),
          sessionID: sessionId,
          part: { reason: 'tool-calls', type: 'step-finish', tokens: { input: 5, output: 2 }, cost: 0 },
        });
        out({ type: 'step_start', timestamp: ts(), sessionID: sessionId, part: { type: 'step-start' } });
      },
      done: () =>
        out({
          type: 'step_finish',
          timestamp: ts(),
          sessionID: sessionId,
          part: { reason: 'stop', type: 'step-finish', tokens: { input: 10, output: 5 }, cost: 0 },
        }),
      fail: (message, status) => {
        out({
          type: 'error',
          timestamp: ts(),
          sessionID: sessionId,
          error: { name: 'APIError', data: { message, ...(status ? { statusCode: status } : {}) } },
        });
        process.exit(1);
      },
    },
    engine_d: {
      start: () => {
        out({ type: 'thread.started', thread_id: sessionId });
        out({ type: 'turn.started' });
      },
      text: (t) => out({ type: 'item.completed', item: { id: `item_${call()}`, type: 'agent_message', text: t } }),
      tool: (name, input, output) => {
        const id = `item_${call()}`;
        out({
          type: 'item.started',
          item: { id, type: 'command_execution', command: `${name} ${JSON.stringify(input)}`, aggregated_output: '', exit_code: null, status: 'in_progress' },
        });
        out({
          type: 'item.completed',
          item: { id, type: 'command_execution', command: `${name} ${JSON.stringify(input)}`, aggregated_output: output, exit_code: 0, status: 'completed' },
        });
      },
      done: () => out({ type: 'turn.completed', usage: { input_tokens: 10, output_tokens: 5 } }),
      fail: (message, status) => {
        const m = status ? `unexpected status ${status} Unauthorized: ${message}` : message;
        out({ type: 'error', message: m });
        out({ type: 'turn.failed', error: { message: m } });
        process.exit(1);
      },
    },
    engine_e: {
      start: () => out({ type: 'init', timestamp: new Date().toISOString(), session_id: sessionId, model: 'stand-in' }),
      text: (t) => {
        for (const piece of t.match(/[\s\S]{1,12}/g) ?? []) {
          out({ type: 'message', timestamp: new Date().toISOString(), role: 'assistant', content: piece, delta: true });
        }
      },
      tool: (name, input, output) => {
        const id = `${name}__${name}_${Date.now()}_0`;
        out({ type: 'tool_use', timestamp: new Date().toISOString(), tool_name: name, tool_id: id, parameters: input });
        out({ type: 'tool_result', timestamp: new Date().toISOString(), tool_id: id, status: 'success', output });
      },
      done: () =>
        out({
          type: 'result',
          timestamp: new Date().toISOString(),
          status: 'success',
          stats: { total_tokens: 15, input_tokens: 10, output_tokens: 5, duration_ms: 1, tool_calls: 0 },
        }),
      fail: (message, status) => {
        const error = status ? `[API Error: ${JSON.stringify({ error: { code: status, message, status: 'UNAUTHENTICATED' } })}]` : message;
        out({ type: 'result', timestamp: new Date().toISOString(), status: 'error', error: { type: 'unknown', message: error }, stats: {} });
        process.exit(status ? status % 256 : 1);
      },
    },
    engine_f: {
      start: () => out({ type: 'system', subtype: 'init', session_id: sessionId, cwd: process.cwd(), tools: ['run_shell_command'], model: 'stand-in' }),
      text: (t) => {
        const id = randomUUID();
        const ev = (event) => out({ type: 'stream_event', session_id: sessionId, parent_tool_use_id: null, event });
        ev({ type: 'message_start', message: { id, role: 'assistant', model: 'stand-in', content: [] } });
        ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
        for (const piece of t.match(/[\s\S]{1,12}/g) ?? []) ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } });
        ev({ type: 'content_block_stop', index: 0 });
        out({
          type: 'assistant',
          session_id: sessionId,
          message: {
            id,
            type: 'message',
            role: 'assistant',
            model: 'stand-in',
            content: [{ type: 'text', text: t }],
            usage: { input_tokens: 10, output_tokens: 5 },
          },
        });
      },
      tool: (name, input, output) => {
        const id = call();
        out({
          type: 'assistant',
          session_id: sessionId,
          message: {
            id: randomUUID(),
            role: 'assistant',
            model: 'stand-in',
            content: [{ type: 'tool_use', id, name, input }],
            usage: { input_tokens: 10, output_tokens: 5 },
          },
        });
        out({
          type: 'user',
          session_id: sessionId,
          message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, is_error: false, content: output }] },
        });
      },
      done: (final) =>
        out({
          type: 'result',
          subtype: 'success',
          session_id: sessionId,
          is_error: false,
          num_turns: 2,
          result: final,
          usage: { input_tokens: 99, output_tokens: 9 },
        }),
      fail: (message, status) => {
        const text = status ? `[API Error: ${status} ${message}]` : message;
        out({
          type: 'assistant',
          session_id: sessionId,
          message: { id: randomUUID(), role: 'assistant', model: 'stand-in', content: [{ type: 'text', text }] },
        });
        out({ type: 'result', subtype: 'error_during_execution', session_id: sessionId, is_error: true, num_turns: 1, error: { message: text } });
        process.exit(1);
      },
    },
    engine_a: {
      start: () => out({ type: 'system', subtype: 'init', session_id: sessionId, model: 'stand-in', cwd: process.cwd() }),
      text: (t) => out({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: t }] }, session_id: sessionId }),
      tool: (name, input, output) => {
        const id = call();
        out({ type: 'tool_call', subtype: 'started', call_id: id, tool_call: { [`${name}ToolCall`]: { args: input } }, session_id: sessionId });
        out({
          type: 'tool_call',
          subtype: 'completed',
          call_id: id,
          tool_call: { [`${name}ToolCall`]: { args: input, result: { success: { stdout: output } } } },
          session_id: sessionId,
        });
      },
      done: (final) => out({ type: 'result', subtype: 'success', is_error: false, result: final, session_id: sessionId }),
      fail: (message) => {
        process.stderr.write(`${message}\n`);
        process.exit(1);
      },
    },
  };
  return formats[engine];
}

/** Ask for permission the way Claude Code does with --permission-prompt-tool: an MCP tools/call to the named server. */
async function askPermission(toolName, input) {
  const tool = flag('--permission-prompt-tool');
  if (!tool) return { behavior: 'deny', message: 'Claude requested permissions to use Bash, but you have not granted it yet.' };
  const [, server, name] = tool.split('__');
  const config = JSON.parse(fs.readFileSync(flag('--mcp-config'), 'utf8')).mcpServers[server];
  const child = spawn(config.command, config.args ?? [], { env: { ...process.env, ...(config.env ?? {}) }, stdio: ['pipe', 'pipe', 'inherit'] });
  const replies = new Map();
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line);
    replies.get(msg.id)?.(msg);
  });
  const request = (id, method, params) =>
    new Promise((resolve) => {
      replies.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  await request(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'stand-in', version: '0' } });
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  const reply = await request(2, 'tools/call', { name, arguments: { tool_name: toolName, input, tool_use_id: `toolu_${randomUUID().slice(0, 8)}` } });
  child.stdin.end();
  return JSON.parse(reply.result.content[0].text);
}

async function askedTool(command) {
  const id = `toolu_${randomUUID().slice(0, 8)}`;
  const input = { command, description: 'a command that needs permission' };
  out({
    type: 'assistant',
    message: { id: `msg_${id}`, role: 'assistant', model: 'stand-in', content: [{ type: 'tool_use', id, name: 'Bash', input }] },
    session_id: sessionId,
  });
  const decision = await askPermission('Bash', input);
  let output;
  if (decision.behavior === 'allow') {
    try {
      output = execSync(decision.updatedInput?.command ?? command, { encoding: 'utf8', shell: '/bin/sh' });
    } catch (err) {
      output = String(err.message);
    }
  } else output = decision.message;
  out({
    type: 'user',
    message: { role: 'user', content: [{ tool_use_id: id, type: 'tool_result', content: output, is_error: decision.behavior !== 'allow' }] },
    session_id: sessionId,
  });
  return decision.behavior === 'allow' ? 'ALLOWED' : `DENIED: ${decision.message}`;
}

// --- main ---

const { prompt, resume } = await parseInvocation();
const sessionId = resume ?? (engine === 'engine_c' ? `ses_${randomUUID().replace(/-/g, '').slice(0, 26)}` : randomUUID());
if (process.env.STANDIN_LOG) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => /^(ANTHROPIC|CLAUDE|OPENCODE|CODEX|OPENAI|CURSOR|SERVICE|IS_SANDBOX|DISABLE|MCP|GEMINI|GOOGLE|QWEN)/.test(k)),
  );
  // Image files as the engine receives them (--image for codex, paths listed in the prompt otherwise).
  const imagePaths = [
    ...argv.flatMap((a, i) => (argv[i - 1] === '--image' ? [a] : [])),
    ...[...(prompt ?? '').matchAll(/^- (\/\S+\.(?:png|jpg|gif|webp|bmp))$/gm)].map((m) => m[1]),
  ];
  const images = imagePaths.map((p) => ({ path: p, exists: fs.existsSync(p), bytes: fs.existsSync(p) ? fs.statSync(p).size : 0 }));
  fs.appendFileSync(
    process.env.STANDIN_LOG,
    `${JSON.stringify({ engine, pid: process.pid, ppid: process.ppid, argv, cwd: process.cwd(), prompt, sessionIn: resume ?? null, sessionOut: sessionId, startedAt: Date.now(), images, env })}\n`,
  );
}
const replay = /REPLAY:(\S+)/.exec(prompt)?.[1] ?? (resume ? /REPLAY-ON-RESUME:(\S+)/.exec(prompt)?.[1] : undefined);
if (replay) await replayFixture(replay);
let history = [];
if (resume) {
  if (!fs.existsSync(sessionFile(resume))) notFound(resume);
  history = JSON.parse(fs.readFileSync(sessionFile(resume), 'utf8'));
}
const fmt = emitter(sessionId);
// In a group prompt the context lines come first; directives are read from the message itself.
const GROUP_MARK = ' in the group:\n';
const own = prompt.includes(GROUP_MARK) ? prompt.slice(prompt.lastIndexOf(GROUP_MARK) + GROUP_MARK.length) : prompt;
const has = (d) => own.includes(d);
const arg = (d) => new RegExp(`${d}:(\\S+)`).exec(own)?.[1];

if (has('CRASH')) {
  process.stderr.write('stand-in: simulated crash\n');
  process.exit(3);
}
fmt.start();
// Written whole or not at all (a temporary file renamed over it): a turn killed mid-write (an
// abort) must not leave a half-written session that crashes the next turn's resume.
fs.writeFileSync(`${sessionFile(sessionId)}.${process.pid}.tmp`, JSON.stringify([...history, prompt]));
fs.renameSync(`${sessionFile(sessionId)}.${process.pid}.tmp`, sessionFile(sessionId));

if (arg('SLEEP')) await sleep(Number(arg('SLEEP')));
if (has('GRANDCHILD')) {
  const child = spawn('sleep', ['300'], { stdio: 'ignore' });
  if (process.env.STANDIN_LOG) fs.appendFileSync(process.env.STANDIN_LOG, `${JSON.stringify({ grandchild: child.pid, parent: process.pid })}\n`);
  setInterval(() => {}, 1000);
  await new Promise(() => {});
}
if (has('SETSID-CHILD')) {
  // A tool shell in a session of its own, as the real CLIs start them; it outlives its parent unless killed.
  const child = spawn('sleep', ['300'], { stdio: 'ignore', detached: true });
  child.unref();
  if (process.env.STANDIN_LOG) fs.appendFileSync(process.env.STANDIN_LOG, `${JSON.stringify({ setsidChild: child.pid, parent: process.pid })}\n`);
  if (!has('THEN-ANSWER')) {
    setInterval(() => {}, 1000);
    await new Promise(() => {});
  }
  if (arg('GATE')) while (!fs.existsSync(arg('GATE'))) await sleep(20);
}
if (has('HANG')) {
  setInterval(() => {}, 1000);
  await new Promise(() => {});
}
if (has('STDERR-FLOOD')) {
  const chunk = `${'e'.repeat(1023)}\n`;
  for (let i = 0; i < 1024; i++) process.stderr.write(chunk);
}
// Files into this turn's outbox ($SERVICE_OUTBOX), as an agent's shell would leave them.
const outbox = process.env.SERVICE_OUTBOX;
for (const m of own.matchAll(/MAKE-FILE:([^:\s]+):(\d+)/g)) {
  if (outbox) fs.writeFileSync(path.join(outbox, m[1]), Buffer.alloc(Number(m[2]), m[1].endsWith('.png') ? 0x89 : 0x61));
}
for (const m of own.matchAll(/MAKE-SPARSE:([^:\s]+):(\d+)/g)) {
  if (!outbox) continue;
  fs.writeFileSync(path.join(outbox, m[1]), '');
  fs.truncateSync(path.join(outbox, m[1]), Number(m[2]));
}
for (const m of own.matchAll(/MAKE-LINK:([^:\s]+):(\S+)/g)) if (outbox) fs.symlinkSync(m[2], path.join(outbox, m[1]));
for (const m of own.matchAll(/MAKE-DIR:(\S+)/g)) if (outbox) fs.mkdirSync(path.join(outbox, m[1]), { recursive: true });
if (has('PROVIDER-ERROR')) fmt.fail('Invalid API key', 401);
if (has('TEXT-THEN-FAIL:')) {
  fmt.text('Before the failure.');
  fmt.fail(
    own
      .slice(own.indexOf('TEXT-THEN-FAIL:') + 15)
      .split('\n')[0]
      .trim(),
  );
}
if (has('FAIL:'))
  fmt.fail(
    own
      .slice(own.indexOf('FAIL:') + 5)
      .split('\n')[0]
      .trim(),
  );
if (arg('GATE')) {
  fmt.text('Before the gate.');
  while (!fs.existsSync(arg('GATE'))) await sleep(20);
}
if (has('TEXT-THEN-TOOL')) {
  fmt.text('Let me look that up.');
  fmt.tool('search', { q: 'x' }, 'found');
}
if (arg('TOOL')) fmt.tool(arg('TOOL'), { command: 'echo hi' }, 'hi\n');
for (const m of own.matchAll(/RUN-SH(-B64)?:([^\n]*)/g)) {
  const command = m[1] ? Buffer.from(m[2].trim(), 'base64').toString('utf8') : m[2].trim();
  let output;
  try {
    output = execSync(command, { encoding: 'utf8', shell: '/bin/sh' });
  } catch (err) {
    output = String(err.message);
  }
  fmt.tool('Bash', { command }, output);
}
const asked = [];
const b64 = /ASK-B64:(\S+)/.exec(own)?.[1];
if (engine === 'engine_b' && b64) asked.push(await askedTool(Buffer.from(b64, 'base64').toString('utf8')));
for (const d of ['ASK:', 'ASK2:']) {
  if (engine === 'engine_b' && has(d))
    asked.push(
      await askedTool(
        own
          .slice(own.indexOf(d) + d.length)
          .split('\n')[0]
          .trim(),
      ),
    );
}
if (has('BIG-LINE')) fmt.tool('bash', { command: 'big' }, 'x'.repeat(500_000));

let answer;
if (has('SAY:'))
  answer = own
    .slice(own.lastIndexOf('SAY:') + 4)
    .split('\n')[0]
    .trim();
else if (arg('LONG') || arg('LONGCJK')) {
  // About <n> characters of numbered paragraphs (split tests); LONGCJK: Chinese text, 3 bytes a character
  const cjk = Boolean(arg('LONGCJK'));
  const n = Number(arg('LONG') ?? arg('LONGCJK'));
  const paras = [];
  for (let i = 0, len = 0; len < n; i++) {
    const p = cjk
      ? `Paragraph ${i}: ${'这是用于测试按字节拆分的中文段落，'.repeat(5)}。`
      : `Paragraph ${i}: ${'lorem ipsum dolor sit amet '.repeat(6).trim()}.`;
    paras.push(p);
    len += p.length + 2;
  }
  answer = [...paras, 'END-OF-LONG-REPLY'].join('\n\n');
} else if (arg('REPLY-FILE')) answer = fs.readFileSync(arg('REPLY-FILE'), 'utf8');
else if (has('EMPTY')) answer = '';
else if (has('ECHO-PROMPT')) answer = prompt;
else if (arg('PAUSED-PARAGRAPHS')) {
  // A reply seen growing: each paragraph waits for its gate file (<dir>/1, <dir>/2) before the next.
  const dir = arg('PAUSED-PARAGRAPHS');
  for (const [i, p] of ['Paragraph one.', 'Paragraph two.'].entries()) {
    fmt.text(`${p}\n\n`);
    while (!fs.existsSync(path.join(dir, String(i + 1)))) await sleep(20);
  }
  answer = 'Paragraph three.';
} else if (has('PARAGRAPHS')) {
  fmt.text('First paragraph.\n\nSecond paragraph.');
  fmt.tool('search', { q: 'x' }, 'found');
  answer = 'Third paragraph.';
} else if (asked.length > 0) answer = asked.join('\n');
else answer = `ECHO: ${prompt.split('\n')[0]}\nTURN: ${history.length + 1}`;
if (answer !== '') fmt.text(answer);
fmt.done(answer);
await new Promise((r) => process.stdout.write('', r));
process.exit(0);
