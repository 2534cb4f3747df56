import type { AgentEvent, FailureKind } from '../events.js';
import type { RpcHandler as Handler, RpcPeer } from './json-rpc.js';
import { arr, isProviderStatus, num, obj, parseJsonLine, str } from './parse-helpers.js';

/**
 * Opening an ACP session, from the answer to `initialize` to the moment the prompt can go:
 * authenticate when asked, a new session or the old one (resumed, or loaded with its history
 * replayed), then unattended mode and the model when the agent offers them. The conversation
 * (acp-client.ts) sends `initialize` and takes over when the session is ready.
 */
export interface AcpSessionSettings {
  cwd: string;
  /** The agent's session id to continue; without it a new session is created. */
  sessionId?: string;
  /** MCP servers in ACP's shape (`session/new` params). */
  mcpServers: unknown[];
  /** Answer permission requests with an allow option (skipPermissions); else ask, or reject. */
  allowPermissions: boolean;
  /** A model to select with `session/set_model` when the agent offers it. */
  model?: string;
  /** An `authenticate` method id to call after initialize (agents that need one). */
  authMethod?: string;
}

export const ACP_PROTOCOL_VERSION = 1;
/** The warning the engine runner gives for the same fallback of a headless engine. */
export const NEW_SESSION_WARNING = 'the previous engine session was not found; a new session was started';
/** Session modes that run tools without asking (Gemini CLI and Qwen Code: yolo; Claude Code adapters: bypassPermissions). */
const UNATTENDED_MODES = /^(yolo|bypassPermissions)$/i;

export interface SessionOpenerDeps {
  request: RpcPeer['request'];
  /** End the turn with this failure. */
  fail(message: string, kind?: FailureKind): AgentEvent[];
  /** The session is set up: `replaying` when `session/load` may still be replaying its history. */
  ready(sessionId: string | undefined, replaying: boolean): void;
}

/** The handler of the reply to `initialize`: it opens the session, and calls `ready` once it is set up. */
export function createSessionOpener(turn: AcpSessionSettings, deps: SessionOpenerDeps): Handler {
  const { request, fail } = deps;
  let sessionId: string | undefined;
  let capabilities: Record<string, unknown> = {};

  const afterInitialize: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) return fail(`the ACP agent refused initialize: ${acpErrorText(error)}`);
    const result = obj(msg.result) ?? {};
    capabilities = obj(result.agentCapabilities) ?? {};
    if (num(result.protocolVersion) !== ACP_PROTOCOL_VERSION) {
      return fail(`the ACP agent speaks protocol version ${String(result.protocolVersion)}, this client ${ACP_PROTOCOL_VERSION}`);
    }
    if (turn.authMethod) {
      request('authenticate', { methodId: turn.authMethod }, (reply) =>
        obj(reply.error) ? fail(`authenticate (${turn.authMethod}) failed: ${acpErrorText(obj(reply.error) ?? {})}`, 'provider') : openSession(),
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
    if (error) return fail(`the ACP agent could not create a session: ${acpErrorText(error)}`, classifyAcpError(acpErrorText(error)));
    const result = obj(msg.result) ?? {};
    sessionId = str(result.sessionId);
    if (!sessionId) return fail('the ACP agent answered session/new without a sessionId');
    return [{ type: 'session', sessionId }, ...configure(result, false)];
  };

  /** Unattended mode and model, when the agent offers them; then the session is ready. */
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
              ? [{ type: 'warning', message: `the ACP agent did not switch to model "${turn.model}": ${acpErrorText(obj(reply.error) ?? {})}` }]
              : [];
          }),
        );
      }
    }
    const run = () => {
      const step = steps.shift();
      if (step) step(run);
      else deps.ready(sessionId, replaying);
    };
    run();
    return out;
  };

  return afterInitialize;
}

/** An ACP error's message with its details, or the model API's own error when the agent passed it through. */
export function acpErrorText(error: Record<string, unknown>): string {
  const data = obj(error.data);
  const details = str(data?.details) ?? str(data?.message) ?? (typeof error.data === 'string' ? error.data : undefined);
  const message = str(error.message) ?? 'error';
  const text = details && details !== message ? `${message}: ${details}` : message;
  // A model API's own error body passed through as the message (Gemini CLI 0.61): its status and message.
  const inner = obj(parseJsonLine(text.slice(text.indexOf('{')))?.error);
  const status = num(inner?.code);
  return status !== undefined && str(inner?.message) ? `API error ${status}: ${str(inner?.message)}` : text;
}

export function classifyAcpError(message: string): FailureKind {
  const status = /\b([45]\d\d)\b/.exec(message);
  return isProviderStatus(status ? Number(status[1]) : undefined) || /api key|unauthori[sz]ed|ECONNREFUSED/i.test(message) ? 'provider' : 'engine';
}
