import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { AgentEvent, FailureKind } from '../events.js';
import { createRpcPeer, type RpcHandler as Handler } from './json-rpc.js';
import { arr, createTextJoiner, isProviderStatus, num, obj, parseJsonLine, str } from './parse-helpers.js';
import type { ConversationChannel, LineParser } from './runner.js';

/**
 * The client side of the Agent Client Protocol (JSON-RPC 2.0, one message per line over the agent's
 * stdin/stdout), for one turn: initialize, open the session (new, resume or load), prompt, map the
 * agent's `session/update` notifications to agent events, answer its requests (permissions; no
 * file system or terminal is offered), and cancel on abort. The runner owns the process; this
 * module only reads lines and writes through the channel it is given.
 */
export interface AcpTurn {
  cwd: string;
  prompt: string;
  /** The agent's session id to continue; without it a new session is created. */
  sessionId?: string;
  /** MCP servers in ACP's shape (`session/new` params). */
  mcpServers: unknown[];
  /** Answer permission requests with an allow option (skipPermissions); else ask, or reject. */
  allowPermissions: boolean;
  /** Chat approvals: ask the person and answer with what they decided (without it: reject). */
  askPermission?: (request: ApprovalAsk) => Promise<ApprovalVerdict>;
  /** A model to select with `session/set_model` when the agent offers it. */
  model?: string;
  /** An `authenticate` method id to call after initialize (agents that need one). */
  authMethod?: string;
  /** How long history replayed after a `session/load` answer may keep arriving before the prompt is sent. */
  replayQuietMs?: number;
}

export const ACP_PROTOCOL_VERSION = 1;
/** The warning the engine runner gives for the same fallback of a headless engine. */
export const NEW_SESSION_WARNING = 'the previous engine session was not found; a new session was started';
const REPLAY_QUIET_MS = 300;
const REPLAY_MAX_MS = 5_000;
/** Session modes that run tools without asking (Gemini CLI and Qwen Code: yolo; Claude Code adapters: bypassPermissions). */
const UNATTENDED_MODES = /^(yolo|bypassPermissions)$/i;

type Phase = 'starting' | 'settling' | 'prompting' | 'done';

interface ToolState {
  name: string;
  input: unknown;
  announced: boolean;
  finished: boolean;
}

export function createAcpConversation(turn: AcpTurn): LineParser {
  const joiner = createTextJoiner();
  const tools = new Map<string, ToolState>();
  let channel: ConversationChannel | undefined;
  let phase: Phase = 'starting';
  let cancelled = false;
  /** Whether the agent said anything, and the tools the person denied (a silent stop after a denial is explained). */
  let sawText = false;
  const denied: string[] = [];
  let sessionId: string | undefined;
  let capabilities: Record<string, unknown> = {};
  let settleTimer: NodeJS.Timeout | undefined;
  let settleDeadline = 0;
  let usage = { input: 0, output: 0, cost: undefined as number | undefined };

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

  const afterInitialize: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) return fail(`the ACP agent refused initialize: ${errorText(error)}`);
    const result = obj(msg.result) ?? {};
    capabilities = obj(result.agentCapabilities) ?? {};
    if (num(result.protocolVersion) !== ACP_PROTOCOL_VERSION) {
      return fail(`the ACP agent speaks protocol version ${String(result.protocolVersion)}, this client ${ACP_PROTOCOL_VERSION}`);
    }
    if (turn.authMethod) {
      request('authenticate', { methodId: turn.authMethod }, (reply) =>
        obj(reply.error) ? fail(`authenticate (${turn.authMethod}) failed: ${errorText(obj(reply.error) ?? {})}`, 'provider') : openSession(),
      );
      return [];
    }
    return openSession();
  };

  const openSession = (): AgentEvent[] => {
    const params = { cwd: turn.cwd, mcpServers: turn.mcpServers };
    if (!turn.sessionId) {
      request('session/new', params, afterNew);
      return [];
    }
    const canResume = obj(obj(capabilities.sessionCapabilities)?.resume) !== undefined;
    if (!canResume && capabilities.loadSession !== true) {
      request('session/new', params, afterNew);
      return [{ type: 'warning', message: `the ACP agent cannot resume sessions; ${NEW_SESSION_WARNING.split('; ')[1]}` }];
    }
    const resumedId = turn.sessionId;
    // session/resume continues without replaying history; session/load replays it first.
    request(canResume ? 'session/resume' : 'session/load', { ...params, sessionId: resumedId }, (reply) => {
      if (obj(reply.error)) {
        request('session/new', params, afterNew);
        return [{ type: 'warning', message: NEW_SESSION_WARNING }];
      }
      sessionId = resumedId;
      return [{ type: 'session', sessionId: resumedId }, ...configure(obj(reply.result) ?? {}, !canResume)];
    });
    return [];
  };

  const afterNew: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) return fail(`the ACP agent could not create a session: ${errorText(error)}`, classify(errorText(error)));
    const result = obj(msg.result) ?? {};
    sessionId = str(result.sessionId);
    if (!sessionId) return fail('the ACP agent answered session/new without a sessionId');
    return [{ type: 'session', sessionId }, ...configure(result, false)];
  };

  /** Unattended mode and model, when the agent offers them; then the prompt. */
  const configure = (result: Record<string, unknown>, replaying: boolean): AgentEvent[] => {
    const steps: Array<(next: () => void) => void> = [];
    const out: AgentEvent[] = [];
    const modes = obj(result.modes);
    const unattended = arr(modes?.availableModes)
      .map((m) => str(obj(m)?.id))
      .find((id) => id !== undefined && UNATTENDED_MODES.test(id));
    if (turn.allowPermissions && unattended && unattended !== str(modes?.currentModeId)) {
      steps.push((next) =>
        request('session/set_mode', { sessionId, modeId: unattended }, () => {
          next();
          return [];
        }),
      );
    }
    const models = obj(result.models);
    if (turn.model && models) {
      const offered = arr(models.availableModels).map((m) => obj(m) ?? {});
      const match = offered.find((m) => m.modelId === turn.model || m.name === turn.model);
      if (!match) out.push({ type: 'warning', message: `the ACP agent does not offer model "${turn.model}"; it uses its own default` });
      else if (match.modelId !== models.currentModelId) {
        steps.push((next) =>
          request('session/set_model', { sessionId, modelId: match.modelId }, (reply) => {
            next();
            return obj(reply.error)
              ? [{ type: 'warning', message: `the ACP agent did not switch to model "${turn.model}": ${errorText(obj(reply.error) ?? {})}` }]
              : [];
          }),
        );
      }
    }
    const run = () => {
      const step = steps.shift();
      if (step) step(run);
      else if (replaying) settle();
      else prompt();
    };
    run();
    return out;
  };

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
    if (error) return fail(errorText(error), classify(errorText(error)));
    const result = obj(msg.result) ?? {};
    const quota = obj(obj(obj(result._meta)?.quota)?.token_count);
    const events: AgentEvent[] = [
      {
        type: 'usage',
        inputTokens: num(quota?.input_tokens) ?? usage.input,
        outputTokens: num(quota?.output_tokens) ?? usage.output,
        ...(usage.cost !== undefined ? { costUsd: usage.cost } : {}),
      },
    ];
    const stop = str(result.stopReason);
    if (stop === 'refusal') return end([...events, { type: 'failure', kind: 'engine', message: 'the agent refused to answer (stopReason refusal)' }]);
    if (stop === 'max_tokens' || stop === 'max_turn_requests') events.push({ type: 'warning', message: `the agent stopped early (${stop})` });
    // Qwen Code 0.24 ends its turn without a word when a tool is denied: say why, not "empty reply".
    if (!sawText && denied.length > 0 && stop !== 'cancelled') events.unshift(...joiner.text(`(The agent stopped: ${denied.join(', ')} was denied.)`, true));
    return end(events);
  };

  // --- what the agent sends ---

  const onUpdate = (params: Record<string, unknown>): AgentEvent[] => {
    if (phase === 'settling') {
      armSettle();
      return [];
    }
    if (phase !== 'prompting' || params.sessionId !== sessionId) return [];
    const u = obj(params.update) ?? {};
    switch (u.sessionUpdate) {
      case 'agent_message_chunk': {
        const meta = obj(obj(u._meta)?.usage);
        usage = { ...usage, input: usage.input + (num(meta?.inputTokens) ?? 0), output: usage.output + (num(meta?.outputTokens) ?? 0) };
        const content = obj(u.content);
        const chunk = content?.type === 'text' ? joiner.text(str(content.text) ?? '', false) : [];
        if (chunk.length > 0) sawText = true;
        return chunk;
      }
      case 'tool_call':
      case 'tool_call_update':
        return onToolCall(u);
      case 'usage_update': {
        const cost = obj(u.cost);
        if (cost?.currency === 'USD' && num(cost.amount) !== undefined) usage = { ...usage, cost: num(cost.amount) };
        return [];
      }
      default:
        return [];
    }
  };

  /** A tool call is announced once its input is known (or it ran), and its result once it finished. */
  const onToolCall = (u: Record<string, unknown>): AgentEvent[] => {
    const id = str(u.toolCallId) ?? '';
    const state = tools.get(id) ?? { name: 'tool', input: {}, announced: false, finished: false };
    tools.set(id, state);
    const meta = obj(u._meta);
    const name = str(meta?.toolName) ?? str(u.kind);
    if (name && (state.name === 'tool' || str(meta?.toolName))) state.name = name;
    const raw = obj(u.rawInput);
    if (raw && Object.keys(raw).length > 0) state.input = raw;
    else if (str(u.title) && Object.keys(state.input as object).length === 0) state.input = { title: str(u.title) };
    const status = str(u.status);
    const out: AgentEvent[] = [];
    const running = (raw && Object.keys(raw).length > 0) || status === 'in_progress' || status === 'completed' || status === 'failed';
    if (!state.announced && running) {
      state.announced = true;
      joiner.breakBlock();
      out.push({ type: 'tool_call', callId: id, name: state.name, input: state.input });
    }
    if (!state.finished && (status === 'completed' || status === 'failed')) {
      state.finished = true;
      out.push({ type: 'tool_result', callId: id, output: toolCallOutput(u), isError: status === 'failed' });
    }
    return out;
  };

  const onAgentRequest = (msg: Record<string, unknown>): AgentEvent[] => {
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
      const choice = cancelled ? undefined : allow ? pick(['allow_once', 'allow_always']) : pick(['reject_once', 'reject_always']);
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
      const known = tools.get(str(toolCall.toolCallId) ?? '');
      const tool = str(obj(toolCall._meta)?.toolName) ?? (known && known.name !== 'tool' ? known.name : undefined) ?? str(toolCall.kind) ?? 'tool';
      const raw = obj(toolCall.rawInput);
      const input = raw && Object.keys(raw).length > 0 ? raw : (known?.input ?? {});
      void turn.askPermission({ tool, input, ...(title ? { title } : {}) }).then((verdict) => {
        if (!verdict.allow) denied.push(tool);
        if (phase !== 'done') answer(verdict.allow);
      });
      return [];
    }
    answer(false);
    return [{ type: 'warning', message: `refused permission for ${title ?? 'a tool call'}: skipPermissions is false` }];
  };

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
      const last = exit.stderrTail
        .split('\n')
        .filter((l) => l.trim())
        .pop()
        ?.trim();
      const how = exit.code === null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
      return [{ type: 'failure', kind: 'engine', message: `the ACP agent ${how} before it answered${last ? `: ${last}` : ''}` }];
    },
  };
}

// --- internal ---

function errorText(error: Record<string, unknown>): string {
  const data = obj(error.data);
  const details = str(data?.details) ?? str(data?.message) ?? (typeof error.data === 'string' ? error.data : undefined);
  const message = str(error.message) ?? 'error';
  const text = details && details !== message ? `${message}: ${details}` : message;
  // A model API's own error body passed through as the message (Gemini CLI 0.61): its status and message.
  const inner = obj(parseJsonLine(text.slice(text.indexOf('{')))?.error);
  const status = num(inner?.code);
  return status !== undefined && str(inner?.message) ? `API error ${status}: ${str(inner?.message)}` : text;
}

function classify(message: string): FailureKind {
  const status = /\b([45]\d\d)\b/.exec(message);
  return isProviderStatus(status ? Number(status[1]) : undefined) || /api key|unauthori[sz]ed|ECONNREFUSED/i.test(message) ? 'provider' : 'engine';
}

/** What a finished tool call produced: its text content blocks, else its raw output. */
function toolCallOutput(u: Record<string, unknown>): string {
  const texts = arr(u.content).flatMap((c) => {
    const block = obj(c);
    if (block?.type === 'content') return [str(obj(block.content)?.text) ?? ''];
    if (block?.type === 'diff') return [`diff of ${str(block.path) ?? 'a file'}`];
    if (block?.type === 'terminal') return [`terminal ${str(block.terminalId) ?? ''}`.trim()];
    return [];
  });
  if (texts.some((t) => t !== '')) return texts.join('\n');
  const raw = u.rawOutput;
  if (raw === undefined || raw === null) return '';
  const rawObj = obj(raw);
  return str(raw) ?? str(rawObj?.output) ?? str(rawObj?.stdout) ?? JSON.stringify(raw);
}
