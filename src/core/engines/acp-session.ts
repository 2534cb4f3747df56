import type { AgentEvent, FailureKind } from '../events.js';
import { createRpcPeer, type RpcHandler as Handler } from './json-rpc.js';
import { arr, num, obj, str } from './parse-helpers.js';
import { type AcpPrompt, classifiedError, errorText } from './acp-turn.js';

/**
 * The client side of an ACP agent's session (JSON-RPC 2.0, one message per line over its stdin
 * and stdout): initialize, authenticate if asked to, open the session (new, resume or load, with
 * a new one when the agent refuses the old), set the unattended mode and the model, and then
 * prompt, once per turn or turn after turn (a resident agent). What the agent sends during a
 * prompt goes to that prompt's mapping (acp-turn.ts); requests we do not serve are refused.
 */
export interface AcpSessionOptions {
  cwd: string;
  /** The agent's session id to continue; without it a new session is created. */
  sessionId?: string;
  /** MCP servers in ACP's shape (`session/new` params). */
  mcpServers: unknown[];
  /** Switch to a mode that runs tools without asking (skipPermissions), when the agent offers one. */
  unattended: boolean;
  /** A model to select with `session/set_model` when the agent offers it. */
  model?: string;
  /** An `authenticate` method id to call after initialize (agents that need one). */
  authMethod?: string;
  /** How long history replayed after a `session/load` answer may keep arriving before the prompt is sent. */
  replayQuietMs?: number;
}

export interface AcpSession {
  /** Start the handshake; `ready` is called once the session is open (its events came out of `receive`). */
  open(ready: () => void): void;
  /** One line of the agent's output. */
  receive(line: string): AgentEvent[];
  /** Send a prompt in the open session; its updates go to `turn`, its answer to `answered`. */
  prompt(text: string, turn: AcpPrompt, answered: (events: AgentEvent[]) => AgentEvent[]): void;
  /** Ask the agent to stop the prompt that runs (a notification); false when none runs. */
  cancel(): boolean;
  /** Stop waiting for replayed history (the turn is over). */
  close(): void;
  readonly sessionId: string | undefined;
}

export const ACP_PROTOCOL_VERSION = 1;
/** The warning the engine runner gives for the same fallback of a headless engine. */
export const NEW_SESSION_WARNING = 'the previous engine session was not found; a new session was started';
const REPLAY_QUIET_MS = 300;
const REPLAY_MAX_MS = 5_000;
/** Session modes that run tools without asking (Gemini CLI and Qwen Code: yolo; Claude Code adapters: bypassPermissions). */
const UNATTENDED_MODES = /^(yolo|bypassPermissions)$/i;

/** `fail`: the session could not be opened (the turn ends with this failure). */
export function createAcpSession(
  opts: AcpSessionOptions,
  send: (msg: Record<string, unknown>) => void,
  fail: (message: string, kind?: FailureKind) => AgentEvent[],
): AcpSession {
  let phase: 'starting' | 'settling' | 'open' = 'starting';
  let sessionId: string | undefined;
  let capabilities: Record<string, unknown> = {};
  let current: AcpPrompt | undefined;
  let onReady: () => void = () => undefined;
  let settleTimer: NodeJS.Timeout | undefined;
  let settleDeadline = 0;
  const reply = (id: unknown, result: Record<string, unknown>) => send({ jsonrpc: '2.0', id, result });
  const peer = createRpcPeer({
    send: (msg) => send({ jsonrpc: '2.0', ...msg }),
    onRequest: (msg) => {
      const params = obj(msg.params) ?? {};
      if (msg.method === 'session/request_permission' && current) return current.onPermission(params, (result) => reply(msg.id, result));
      if (msg.method === 'session/request_permission') {
        reply(msg.id, { outcome: { outcome: 'cancelled' } });
        return [];
      }
      // No file system, terminal or extension methods are offered (initialize says so).
      send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `Method not found: ${String(msg.method)}` } });
      return [];
    },
    onNotification: (method, params) => {
      if (method !== 'session/update') return [];
      if (phase === 'settling') {
        armSettle();
        return [];
      }
      if (!current || params.sessionId !== sessionId) return [];
      return current.onUpdate(obj(params.update) ?? {});
    },
  });
  const request = peer.request;

  const afterInitialize: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) return fail(`the ACP agent refused initialize: ${errorText(error)}`);
    const result = obj(msg.result) ?? {};
    capabilities = obj(result.agentCapabilities) ?? {};
    if (num(result.protocolVersion) !== ACP_PROTOCOL_VERSION) {
      return fail(`the ACP agent speaks protocol version ${String(result.protocolVersion)}, this client ${ACP_PROTOCOL_VERSION}`);
    }
    if (opts.authMethod) {
      request('authenticate', { methodId: opts.authMethod }, (r) =>
        obj(r.error) ? fail(`authenticate (${opts.authMethod}) failed: ${errorText(obj(r.error) ?? {})}`, 'provider') : openSession(),
      );
      return [];
    }
    return openSession();
  };

  const openSession = (): AgentEvent[] => {
    const params = { cwd: opts.cwd, mcpServers: opts.mcpServers };
    if (!opts.sessionId) {
      request('session/new', params, afterNew);
      return [];
    }
    const canResume = obj(obj(capabilities.sessionCapabilities)?.resume) !== undefined;
    if (!canResume && capabilities.loadSession !== true) {
      request('session/new', params, afterNew);
      return [{ type: 'warning', message: `the ACP agent cannot resume sessions; ${NEW_SESSION_WARNING.split('; ')[1]}` }];
    }
    const resumedId = opts.sessionId;
    // session/resume continues without replaying history; session/load replays it first.
    request(canResume ? 'session/resume' : 'session/load', { ...params, sessionId: resumedId }, (r) => {
      if (obj(r.error)) {
        request('session/new', params, afterNew);
        return [{ type: 'warning', message: NEW_SESSION_WARNING }];
      }
      sessionId = resumedId;
      return [{ type: 'session', sessionId: resumedId }, ...configure(obj(r.result) ?? {}, !canResume)];
    });
    return [];
  };

  const afterNew: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) {
      const { message, kind } = classifiedError(error);
      return fail(`the ACP agent could not create a session: ${message}`, kind);
    }
    const result = obj(msg.result) ?? {};
    sessionId = str(result.sessionId);
    if (!sessionId) return fail('the ACP agent answered session/new without a sessionId');
    return [{ type: 'session', sessionId }, ...configure(result, false)];
  };

  /** Unattended mode and model, when the agent offers them; then the session is open. */
  const configure = (result: Record<string, unknown>, replaying: boolean): AgentEvent[] => {
    const steps: Array<(next: () => void) => void> = [];
    const out: AgentEvent[] = [];
    const modes = obj(result.modes);
    const unattended = arr(modes?.availableModes)
      .map((m) => str(obj(m)?.id))
      .find((id) => id !== undefined && UNATTENDED_MODES.test(id));
    if (opts.unattended && unattended && unattended !== str(modes?.currentModeId)) {
      steps.push((next) =>
        request('session/set_mode', { sessionId, modeId: unattended }, () => {
          next();
          return [];
        }),
      );
    }
    const models = obj(result.models);
    if (opts.model && models) {
      const offered = arr(models.availableModels).map((m) => obj(m) ?? {});
      const match = offered.find((m) => m.modelId === opts.model || m.name === opts.model);
      if (!match) out.push({ type: 'warning', message: `the ACP agent does not offer model "${opts.model}"; it uses its own default` });
      else if (match.modelId !== models.currentModelId) {
        steps.push((next) =>
          request('session/set_model', { sessionId, modelId: match.modelId }, (r) => {
            next();
            return obj(r.error)
              ? [{ type: 'warning', message: `the ACP agent did not switch to model "${opts.model}": ${errorText(obj(r.error) ?? {})}` }]
              : [];
          }),
        );
      }
    }
    const run = () => {
      const step = steps.shift();
      if (step) step(run);
      else if (replaying) settle();
      else opened();
    };
    run();
    return out;
  };
  const opened = () => {
    phase = 'open';
    onReady();
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
    const wait = Math.min(opts.replayQuietMs ?? REPLAY_QUIET_MS, Math.max(0, settleDeadline - Date.now()));
    settleTimer = setTimeout(opened, wait);
  };

  return {
    open(ready) {
      onReady = ready;
      request(
        'initialize',
        { protocolVersion: ACP_PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } },
        afterInitialize,
      );
    },
    receive: (line) => peer.receive(line),
    prompt(text, turn, answered) {
      current = turn;
      request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] }, (msg) => {
        if (current === turn) current = undefined;
        return answered(turn.answered(msg));
      });
    },
    cancel() {
      if (!current || !sessionId) return false;
      current.cancel();
      send({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId } });
      return true;
    },
    close: () => clearTimeout(settleTimer),
    get sessionId() {
      return sessionId;
    },
  };
}
