import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { AgentEvent, FailureKind } from '../events.js';
import { createRpcPeer, type RpcHandler as Handler } from './json-rpc.js';
import { arr, createTextJoiner, num, obj, str } from './parse-helpers.js';
import type { ConversationChannel, LineParser } from './runner.js';

/**
 * One turn of engine_d through `codex app-server` (Codex 0.169; the protocol is what
 * `codex app-server generate-ts` prints, fixtures in test/fixtures/engine_d-app-server): JSON-RPC
 * over the server's stdin/stdout, one message per line, without the `jsonrpc` member.
 * initialize (+ initialized), thread/start or thread/resume, turn/start; then item and turn
 * notifications become agent events, and the server's approval requests go to the person.
 * This is the path of `skipPermissions: false`: `codex exec` cannot ask.
 */
export interface CodexAppServerTurn {
  cwd: string;
  prompt: string;
  /** Absolute paths of image files (`localImage` inputs). */
  images: readonly string[];
  /** The thread to continue (a Codex thread id); without it a new thread is started. */
  threadId?: string;
  /** `approvalPolicy` and `sandbox` of thread/start and thread/resume. */
  approvalPolicy: 'untrusted' | 'on-request' | 'never';
  sandbox: 'read-only' | 'workspace-write' | 'danger-full-access';
  /** Ask the person; without it every approval request is declined (with a warning). */
  ask?: (request: ApprovalAsk) => Promise<ApprovalVerdict>;
  /** Our version, for initialize's clientInfo. */
  clientVersion: string;
}

type Phase = 'starting' | 'running' | 'done';

export function createCodexAppServerConversation(turn: CodexAppServerTurn): LineParser {
  const items = createItemReader();
  let channel: ConversationChannel | undefined;
  let phase: Phase = 'starting';
  let cancelled = false;
  let threadId: string | undefined;
  let turnId: string | undefined;

  const send = (msg: Record<string, unknown>) => channel?.send(JSON.stringify(msg));
  const peer = createRpcPeer({ send, onRequest: (msg) => onServerRequest(msg), onNotification: (method, params) => onNotification(method, params) });
  const request = peer.request;
  const end = (events: AgentEvent[]): AgentEvent[] => {
    phase = 'done';
    channel?.end();
    return events;
  };
  const fail = (message: string, kind: FailureKind = 'engine'): AgentEvent[] => end([{ type: 'failure', kind, message }]);
  const settings = () => ({ cwd: turn.cwd, approvalPolicy: turn.approvalPolicy, sandbox: turn.sandbox });

  // --- the turn, step by step ---

  const afterInitialize: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) return fail(`codex app-server refused initialize: ${errorText(error)}`);
    send({ method: 'initialized' });
    if (turn.threadId) {
      const resumed = turn.threadId;
      request('thread/resume', { threadId: resumed, ...settings(), excludeTurns: true }, (reply) => {
        const err = obj(reply.error);
        // The engine runner starts a new thread after this, with the same warning as `codex exec resume`.
        if (err) return fail(`Codex has no session with that thread id: ${errorText(err)}`, 'session_not_found');
        return afterThread(reply);
      });
    } else request('thread/start', settings(), afterThread);
    return [];
  };

  const afterThread: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) return fail(`codex app-server could not open a thread: ${errorText(error)}`, classify(errorText(error)));
    threadId = str(obj(obj(msg.result)?.thread)?.id);
    if (!threadId) return fail('codex app-server answered without a thread id');
    if (cancelled) return end([{ type: 'session', sessionId: threadId }]);
    const input = [{ type: 'text', text: turn.prompt, text_elements: [] }, ...turn.images.map((path) => ({ type: 'localImage', path }))];
    request('turn/start', { threadId, input }, (reply) => {
      const err = obj(reply.error);
      if (err) return fail(errorText(err), classify(errorText(err)));
      turnId ??= str(obj(obj(reply.result)?.turn)?.id);
      if (cancelled) interrupt();
      return [];
    });
    phase = 'running';
    return [{ type: 'session', sessionId: threadId }];
  };

  const interrupt = () => {
    if (threadId && turnId) request('turn/interrupt', { threadId, turnId }, () => []);
  };

  const afterTurn = (t: Record<string, unknown>): AgentEvent[] => {
    const usageEvent = items.usageEvent();
    const status = str(t.status);
    if (status === 'completed') return end([usageEvent, { type: 'final', text: items.lastMessage }]);
    if (status === 'interrupted' && cancelled) return end([usageEvent]);
    const message = str(obj(t.error)?.message) ?? items.lastError ?? `Codex turn ${status ?? 'ended'} without an answer`;
    return end([usageEvent, { type: 'failure', kind: classify(message), message }]);
  };

  // --- what the server sends ---

  const onNotification = (method: string, params: Record<string, unknown>): AgentEvent[] => {
    if (phase !== 'running' || (params.threadId !== undefined && params.threadId !== null && params.threadId !== threadId)) return [];
    switch (method) {
      case 'turn/started':
        turnId ??= str(obj(params.turn)?.id);
        return [];
      case 'turn/completed':
        return afterTurn(obj(params.turn) ?? {});
      default:
        return items.read(method, params);
    }
  };

  const onServerRequest = (msg: Record<string, unknown>): AgentEvent[] =>
    answerServerRequest(msg, send, items.pathsOf, { ask: turn.ask, cancelled: () => cancelled, done: () => phase === 'done' });

  return {
    conversation: {
      open(c) {
        channel = c;
        request('initialize', { clientInfo: { name: 'service', title: null, version: turn.clientVersion }, capabilities: null }, afterInitialize);
      },
      cancel() {
        cancelled = true;
        if (phase === 'running' && turnId) interrupt();
        else if (phase !== 'running') end([]);
      },
    },
    parseLine(line) {
      return phase === 'done' ? [] : peer.receive(line);
    },
    finish(exit) {
      if (phase === 'done') return [];
      phase = 'done';
      const last =
        items.lastError ??
        exit.stderrTail
          .split('\n')
          .filter((l) => l.trim() && !/^WARNING: |codex could not find bubblewrap/i.test(l))
          .pop()
          ?.trim();
      const how = exit.code === null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
      return [{ type: 'failure', kind: last ? classify(last) : 'engine', message: `codex app-server ${how} before the turn ended${last ? `: ${last}` : ''}` }];
    },
  };
}

// --- internal ---

/**
 * What the turn's items say, as agent events: streamed and completed agent messages, tool calls
 * and their results, token usage, the last error Codex reported.
 */
function createItemReader() {
  const joiner = createTextJoiner();
  /** Tool items by id: announced once, finished once; file changes keep their paths for the approval. */
  const tools = new Map<string, { finished: boolean; paths: string[] }>();
  /** Agent messages whose text streamed as deltas (their completed item repeats it). */
  const streamed = new Set<string>();
  let lastMessage = '';
  let lastError: string | undefined;
  let usage = { input: 0, output: 0 };

  const onItem = (item: Record<string, unknown>, completed: boolean): AgentEvent[] => {
    const id = str(item.id) ?? '';
    if (item.type === 'agentMessage') {
      if (!completed) return [];
      lastMessage = str(item.text) ?? '';
      // A message that did not stream (no deltas) is shown whole.
      if (streamed.has(id)) return [];
      streamed.add(id);
      return joiner.text(lastMessage, true);
    }
    const call = toolCallOf(item);
    if (!call) return [];
    const out: AgentEvent[] = [];
    let state = tools.get(id);
    if (!state) {
      state = { finished: false, paths: [] };
      tools.set(id, state);
      joiner.breakBlock();
      out.push({ type: 'tool_call', callId: id, name: call.name, input: call.input });
    }
    if (item.type === 'fileChange') state.paths = arr(item.changes).map((c) => str(obj(c)?.path) ?? '');
    if (completed && !state.finished) {
      state.finished = true;
      out.push({ type: 'tool_result', callId: id, ...toolResultOf(item) });
    }
    return out;
  };

  return {
    /** A notification about the turn's content (any other gives none). */
    read(method: string, params: Record<string, unknown>): AgentEvent[] {
      switch (method) {
        case 'item/agentMessage/delta': {
          const itemId = str(params.itemId) ?? '';
          const isNew = !streamed.has(itemId);
          streamed.add(itemId);
          return joiner.text(str(params.delta) ?? '', isNew);
        }
        case 'item/started':
          return onItem(obj(params.item) ?? {}, false);
        case 'item/completed':
          return onItem(obj(params.item) ?? {}, true);
        case 'thread/tokenUsage/updated': {
          const last = obj(obj(params.tokenUsage)?.last);
          usage = { input: usage.input + (num(last?.inputTokens) ?? 0), output: usage.output + (num(last?.outputTokens) ?? 0) };
          return [];
        }
        case 'error': {
          const message = str(obj(params.error)?.message) ?? 'error';
          if (params.willRetry === true) return [{ type: 'warning', message: `Reconnecting... (${message})` }];
          lastError = message;
          return [];
        }
        case 'warning':
          return [{ type: 'warning', message: str(params.message) ?? 'warning' }];
        default:
          return [];
      }
    },
    /** The paths a file change item touches (for its approval). */
    pathsOf: (itemId: string): string[] => tools.get(itemId)?.paths ?? [],
    get lastMessage() {
      return lastMessage;
    },
    get lastError() {
      return lastError;
    },
    usageEvent: (): AgentEvent => ({ type: 'usage', inputTokens: usage.input, outputTokens: usage.output }),
  };
}

/** What an approval needs of the conversation: whom to ask, and whether the turn was cancelled or is over. */
interface ApprovalContext {
  ask: CodexAppServerTurn['ask'];
  cancelled(): boolean;
  done(): boolean;
}

/** The server's requests: approvals go to the person (`decide`), the others get a fixed answer. */
function answerServerRequest(
  msg: Record<string, unknown>,
  send: (msg: Record<string, unknown>) => void,
  pathsOf: (itemId: string) => string[],
  turn: ApprovalContext,
): AgentEvent[] {
  const params = obj(msg.params) ?? {};
  const reply = (result: unknown) => send({ id: msg.id, result });
  switch (msg.method) {
    case 'item/commandExecution/requestApproval': {
      const command =
        str(params.command) ??
        arr(params.commandActions)
          .map((a) => str(obj(a)?.command) ?? '')
          .join('; ');
      const reason = str(params.reason);
      return decide(turn, { tool: 'shell', input: { command }, ...(reason ? { title: reason } : {}) }, (d) => reply({ decision: d }));
    }
    case 'item/fileChange/requestApproval': {
      const paths = pathsOf(str(params.itemId) ?? '');
      const where = paths.join(', ') || str(params.grantRoot) || str(params.reason) || 'a file change';
      return decide(turn, { tool: 'file_change', input: { path: where } }, (d) => reply({ decision: d }));
    }
    case 'item/permissions/requestApproval':
      // Extra sandbox permissions (network, more paths): not granted; the sandbox setting decides.
      reply({ permissions: {}, scope: 'turn' });
      return [{ type: 'warning', message: 'Codex asked for extra sandbox permissions; none were granted' }];
    case 'mcpServer/elicitation/request':
      reply({ action: 'decline', content: null, _meta: null });
      return [];
    case 'item/tool/requestUserInput':
      reply({ answers: {} });
      return [];
    default:
      send({ id: msg.id, error: { code: -32601, message: `Method not found: ${String(msg.method)}` } });
      return [];
  }
}

/** Ask the person (or decline without anyone to ask) and answer Codex; after an abort: `cancel`. */
function decide(turn: ApprovalContext, ask: ApprovalAsk, answer: (decision: 'accept' | 'decline' | 'cancel') => void): AgentEvent[] {
  if (turn.cancelled()) {
    answer('cancel');
    return [];
  }
  if (!turn.ask) {
    answer('decline');
    return [{ type: 'warning', message: `refused permission for ${ask.tool}: nobody can approve it in this turn` }];
  }
  // "Always" is ours to remember (per session key, by tool); Codex is only ever allowed once.
  void turn.ask(ask).then((verdict) => {
    if (turn.done()) return;
    answer(turn.cancelled() ? 'cancel' : verdict.allow ? 'accept' : 'decline');
  });
  return [];
}

/** A thread item that is a tool call, as our tool_call event (names as the `codex exec` parser gives them). */
function toolCallOf(item: Record<string, unknown>): { name: string; input: unknown } | undefined {
  switch (item.type) {
    case 'commandExecution':
      return { name: 'shell', input: { command: str(item.command) ?? '' } };
    case 'fileChange':
      return { name: 'file_change', input: { changes: arr(item.changes).map((c) => ({ path: str(obj(c)?.path), kind: str(obj(obj(c)?.kind)?.type) })) } };
    case 'mcpToolCall':
      return { name: `${str(item.server) ?? 'mcp'}.${str(item.tool) ?? 'tool'}`, input: item.arguments ?? {} };
    case 'webSearch':
      return { name: 'web_search', input: { query: str(item.query) ?? '' } };
    default:
      return undefined;
  }
}

function toolResultOf(item: Record<string, unknown>): { output: string; isError?: boolean } {
  const status = str(item.status);
  if (status === 'declined') return { output: 'declined', isError: true };
  if (item.type === 'commandExecution') {
    const code = num(item.exitCode);
    return { output: str(item.aggregatedOutput) ?? '', isError: status === 'failed' || (code !== undefined && code !== 0) };
  }
  if (item.type === 'mcpToolCall') {
    const error = obj(item.error);
    return error ? { output: str(error.message) ?? 'error', isError: true } : { output: JSON.stringify(item.result ?? null) };
  }
  return { output: status ?? 'completed', isError: status === 'failed' };
}

function errorText(error: Record<string, unknown>): string {
  return str(error.message) ?? JSON.stringify(error);
}

/** The same rule as the `codex exec` parser: these messages mean the model endpoint failed. */
export function classify(message: string): 'provider' | 'engine' {
  return /unexpected status (401|403|429|5\d\d)\b|Connection failed|error sending request|stream disconnected/i.test(message) ? 'provider' : 'engine';
}
