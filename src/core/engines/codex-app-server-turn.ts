import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { AgentEvent } from '../events.js';
import { arr, createTextJoiner, num, obj, str } from './parse-helpers.js';

/**
 * One turn of a `codex app-server` thread (codex-app-server.ts): its item and turn notifications
 * as agent events (the item reader), and the server's requests during it (approvals asked of the
 * person). A per-turn server has one of these; a resident one (warm engines) a new one per turn.
 */
export interface CodexTurn {
  onNotification(method: string, params: Record<string, unknown>): AgentEvent[];
  onServerRequest(msg: Record<string, unknown>): AgentEvent[];
  /** The server named the turn; an interrupt asked for before that is sent now. */
  started(turnId: string | undefined, interrupt: (turnId: string) => void): void;
  cancel(interrupt: (turnId: string) => void): void;
  end(events: AgentEvent[]): AgentEvent[];
  lastError(): string | undefined;
}

type AskPerson = (request: ApprovalAsk) => Promise<ApprovalVerdict>;

/** One turn's items and notifications as agent events, and the server's approval requests of it. */
export function createCodexTurn(
  ask: AskPerson | undefined,
  ended: (events: AgentEvent[]) => AgentEvent[],
  send: (msg: Record<string, unknown>) => void,
): CodexTurn {
  const items = createItemReader();
  let over = false;
  let cancelled = false;
  let turnId: string | undefined;
  const end = (events: AgentEvent[]) => {
    over = true;
    return ended(events);
  };

  const afterTurn = (t: Record<string, unknown>): AgentEvent[] => {
    const usageEvent = items.usageEvent();
    const status = str(t.status);
    // An interrupted turn ends with what it said so far: on a resident server the turn is over, the thread goes on.
    if (status === 'completed' || (status === 'interrupted' && cancelled)) return end([usageEvent, { type: 'final', text: items.lastMessage }]);
    const message = str(obj(t.error)?.message) ?? items.lastError ?? `Codex turn ${status ?? 'ended'} without an answer`;
    return end([usageEvent, { type: 'failure', kind: classify(message), message }]);
  };

  return {
    onNotification(method, params) {
      if (over) return [];
      switch (method) {
        case 'turn/started':
          turnId ??= str(obj(params.turn)?.id);
          return [];
        case 'turn/completed':
          return afterTurn(obj(params.turn) ?? {});
        default:
          return items.read(method, params);
      }
    },
    onServerRequest: (msg) => answerServerRequest(msg, send, items.pathsOf, { ask, cancelled: () => cancelled, done: () => over }),
    started(id, interrupt) {
      turnId ??= id;
      if (cancelled && turnId) interrupt(turnId);
    },
    cancel(interrupt) {
      cancelled = true;
      if (turnId) interrupt(turnId);
    },
    end,
    lastError: () => items.lastError,
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
  ask: AskPerson | undefined;
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

/** The same rule as the `codex exec` parser: these messages mean the model endpoint failed. */
export function classify(message: string): 'provider' | 'engine' {
  return /unexpected status (401|403|429|5\d\d)\b|Connection failed|error sending request|stream disconnected/i.test(message) ? 'provider' : 'engine';
}
