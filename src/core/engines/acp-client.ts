import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { AgentEvent, FailureKind } from '../events.js';
import { type AcpUpdateReader, createAcpUpdateReader } from './acp-updates.js';
import { ACP_PROTOCOL_VERSION, type AcpSessionSettings, acpErrorText, classifyAcpError, createSessionOpener } from './acp-session.js';
import { createRpcPeer, type RpcHandler as Handler } from './json-rpc.js';
import { arr, obj, str } from './parse-helpers.js';
import type { ConversationChannel, ExitInfo, LineParser } from './runner.js';

/**
 * The client side of the Agent Client Protocol (JSON-RPC 2.0, one message per line over the agent's
 * stdin/stdout), for one turn: initialize, open the session (new, resume or load: acp-session.ts),
 * prompt, map the agent's `session/update` notifications to agent events (acp-updates.ts), answer
 * its requests (permissions; no file system or terminal is offered), and cancel on abort. The
 * runner owns the process; this module only reads lines and writes through the channel it is given.
 */
export interface AcpTurn extends AcpSessionSettings {
  prompt: string;
  /** Chat approvals: ask the person and answer with what they decided (without it: reject). */
  askPermission?: (request: ApprovalAsk) => Promise<ApprovalVerdict>;
  /** How long history replayed after a `session/load` answer may keep arriving before the prompt is sent. */
  replayQuietMs?: number;
}

const REPLAY_QUIET_MS = 300;
const REPLAY_MAX_MS = 5_000;

type Phase = 'starting' | 'settling' | 'prompting' | 'done';

export function createAcpConversation(turn: AcpTurn): LineParser {
  const updates = createAcpUpdateReader();
  let channel: ConversationChannel | undefined;
  let phase: Phase = 'starting';
  let cancelled = false;
  /** The tools the person denied (a silent stop after a denial is explained). */
  const denied: string[] = [];
  let sessionId: string | undefined;
  let settleTimer: NodeJS.Timeout | undefined;
  let settleDeadline = 0;

  const send = (msg: Record<string, unknown>) => channel?.send(JSON.stringify({ jsonrpc: '2.0', ...msg }));
  const peer = createRpcPeer({
    send,
    onRequest: (msg) => onAgentRequest(msg),
    onNotification: (method, params) => (method === 'session/update' ? onUpdate(params) : []),
  });
  const request = peer.request;
  const end = (events: AgentEvent[]): AgentEvent[] => {
    phase = 'done';
    clearTimeout(settleTimer);
    channel?.end();
    return events;
  };
  const fail = (message: string, kind: FailureKind = 'engine'): AgentEvent[] => end([{ type: 'failure', kind, message }]);

  // --- the session, step by step ---

  const afterInitialize = createSessionOpener(turn, {
    request,
    fail,
    ready(id, replaying) {
      sessionId = id;
      if (replaying) settle();
      else prompt();
    },
  });

  /**
   * History a `session/load` replays belongs before its answer, but Gemini CLI 0.61 streams it
   * after answering: updates are dropped until they have been quiet for a moment.
   */
  const settle = () => {
    phase = 'settling';
    settleDeadline = Date.now() + REPLAY_MAX_MS;
    armSettle();
  };
  const armSettle = () => {
    clearTimeout(settleTimer);
    const wait = Math.min(turn.replayQuietMs ?? REPLAY_QUIET_MS, Math.max(0, settleDeadline - Date.now()));
    settleTimer = setTimeout(prompt, wait);
  };

  const prompt = () => {
    if (phase === 'done') return;
    phase = 'prompting';
    request('session/prompt', { sessionId, prompt: [{ type: 'text', text: turn.prompt }] }, afterPrompt);
  };

  const afterPrompt: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) return fail(acpErrorText(error), classifyAcpError(acpErrorText(error)));
    return end(promptEndEvents(obj(msg.result) ?? {}, updates, denied));
  };

  // --- what the agent sends ---

  const onUpdate = (params: Record<string, unknown>): AgentEvent[] => {
    if (phase === 'settling') {
      armSettle();
      return [];
    }
    if (phase !== 'prompting' || params.sessionId !== sessionId) return [];
    return updates.read(obj(params.update) ?? {});
  };

  const onAgentRequest = (msg: Record<string, unknown>): AgentEvent[] =>
    answerAgentRequest(msg, send, turn, updates, { cancelled: () => cancelled, done: () => phase === 'done', denied: (tool) => denied.push(tool) });

  return {
    conversation: {
      open(c) {
        channel = c;
        request(
          'initialize',
          { protocolVersion: ACP_PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } },
          afterInitialize,
        );
      },
      cancel() {
        cancelled = true;
        if (phase === 'prompting' && sessionId) send({ method: 'session/cancel', params: { sessionId } });
        else end([]);
      },
    },
    parseLine(line) {
      return phase === 'done' ? [] : peer.receive(line);
    },
    finish(exit) {
      clearTimeout(settleTimer);
      if (phase === 'done') return [];
      phase = 'done';
      return [exitFailure(exit)];
    },
  };
}

// --- internal ---

/** The events of the prompt's answer: usage, how the agent stopped, and why it said nothing when a denial stopped it. */
function promptEndEvents(result: Record<string, unknown>, updates: AcpUpdateReader, denied: readonly string[]): AgentEvent[] {
  const quota = obj(obj(obj(result._meta)?.quota)?.token_count);
  const events: AgentEvent[] = [updates.usageEvent(quota)];
  const stop = str(result.stopReason);
  if (stop === 'refusal') return [...events, { type: 'failure', kind: 'engine', message: 'the agent refused to answer (stopReason refusal)' }];
  if (stop === 'max_tokens' || stop === 'max_turn_requests') events.push({ type: 'warning', message: `the agent stopped early (${stop})` });
  // Qwen Code 0.24 ends its turn without a word when a tool is denied: say why, not "empty reply".
  if (!updates.sawText && denied.length > 0 && stop !== 'cancelled') events.unshift(...updates.note(`(The agent stopped: ${denied.join(', ')} was denied.)`));
  return events;
}

/** The agent's requests: a permission request is allowed (skipPermissions), asked or rejected; nothing else is offered. */
function answerAgentRequest(
  msg: Record<string, unknown>,
  send: (msg: Record<string, unknown>) => void,
  turn: AcpTurn,
  updates: AcpUpdateReader,
  state: { cancelled(): boolean; done(): boolean; denied(tool: string): void },
): AgentEvent[] {
  const params = obj(msg.params) ?? {};
  if (msg.method !== 'session/request_permission') {
    // No file system, terminal or extension methods are offered (initialize says so).
    send({ id: msg.id, error: { code: -32601, message: `Method not found: ${String(msg.method)}` } });
    return [];
  }
  const options = arr(params.options).map((o) => obj(o) ?? {});
  const pick = (kinds: string[]) => kinds.map((k) => options.find((o) => o.kind === k)).find(Boolean);
  const answer = (allow: boolean) => {
    // After session/cancel the protocol wants every pending permission request answered `cancelled`.
    const choice = state.cancelled() ? undefined : allow ? pick(['allow_once', 'allow_always']) : pick(['reject_once', 'reject_always']);
    send({ id: msg.id, result: { outcome: choice ? { outcome: 'selected', optionId: choice.optionId } : { outcome: 'cancelled' } } });
  };
  const toolCall = obj(params.toolCall) ?? {};
  const title = str(toolCall.title);
  if (turn.allowPermissions) {
    answer(true);
    return [];
  }
  if (turn.askPermission) {
    // "Always" is ours to remember (for this session key); the agent is only ever allowed once.
    const known = updates.tool(str(toolCall.toolCallId) ?? '');
    const tool = str(obj(toolCall._meta)?.toolName) ?? (known && known.name !== 'tool' ? known.name : undefined) ?? str(toolCall.kind) ?? 'tool';
    const raw = obj(toolCall.rawInput);
    const input = raw && Object.keys(raw).length > 0 ? raw : (known?.input ?? {});
    void turn.askPermission({ tool, input, ...(title ? { title } : {}) }).then((verdict) => {
      if (!verdict.allow) state.denied(tool);
      if (!state.done()) answer(verdict.allow);
    });
    return [];
  }
  answer(false);
  return [{ type: 'warning', message: `refused permission for ${title ?? 'a tool call'}: skipPermissions is false` }];
}

/** The agent exited before it answered: the failure, with its last line of stderr. */
function exitFailure(exit: ExitInfo): AgentEvent {
  const last = exit.stderrTail
    .split('\n')
    .filter((l) => l.trim())
    .pop()
    ?.trim();
  const how = exit.code === null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return { type: 'failure', kind: 'engine', message: `the ACP agent ${how} before it answered${last ? `: ${last}` : ''}` };
}
