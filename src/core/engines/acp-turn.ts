import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { AgentEvent, FailureKind } from '../events.js';
import { arr, createTextJoiner, isProviderStatus, num, obj, parseJsonLine, str } from './parse-helpers.js';

/**
 * One prompt of an ACP session, as agent events: the agent's `session/update` notifications
 * (text, tool calls, usage), its permission requests (allowed, asked or refused), and the prompt's
 * answer (its stop reason). The session around it (acp-session.ts) routes to it what belongs to
 * the prompt; a resident agent gets a fresh one per turn.
 */
export interface AcpTurnOptions {
  /** Answer permission requests with an allow option (skipPermissions); else ask, or reject. */
  allowPermissions: boolean;
  /** Chat approvals: ask the person and answer with what they decided (without it: reject). */
  askPermission?: (request: ApprovalAsk) => Promise<ApprovalVerdict>;
}

export interface AcpPrompt {
  onUpdate(update: Record<string, unknown>): AgentEvent[];
  /** A `session/request_permission` of the agent; `answer` sends the reply. */
  onPermission(params: Record<string, unknown>, answer: (result: Record<string, unknown>) => void): AgentEvent[];
  /** The prompt's answer (result or error): the turn's last events. */
  answered(msg: Record<string, unknown>): AgentEvent[];
  /** The user aborted: pending permission requests are answered `cancelled` from now on. */
  cancel(): void;
  /** The text so far (a resident turn's final text). */
  text(): string;
}

export function createAcpPrompt(opts: AcpTurnOptions): AcpPrompt {
  const joiner = createTextJoiner();
  const tools = new Map<string, ToolState>();
  const texts: string[] = [];
  let cancelled = false;
  let over = false;
  /** Whether the agent said anything, and the tools the person denied (a silent stop after a denial is explained). */
  let sawText = false;
  const denied: string[] = [];
  let usage = { input: 0, output: 0, cost: undefined as number | undefined };
  const say = (events: AgentEvent[]) => {
    for (const e of events) if (e.type === 'text') texts.push(e.delta);
    return events;
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

  return {
    onUpdate(u) {
      switch (u.sessionUpdate) {
        case 'agent_message_chunk': {
          const meta = obj(obj(u._meta)?.usage);
          usage = { ...usage, input: usage.input + (num(meta?.inputTokens) ?? 0), output: usage.output + (num(meta?.outputTokens) ?? 0) };
          const content = obj(u.content);
          const chunk = content?.type === 'text' ? joiner.text(str(content.text) ?? '', false) : [];
          if (chunk.length > 0) sawText = true;
          return say(chunk);
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
    },
    onPermission(params, reply) {
      const options = arr(params.options).map((o) => obj(o) ?? {});
      const pick = (kinds: string[]) => kinds.map((k) => options.find((o) => o.kind === k)).find(Boolean);
      const answer = (allow: boolean) => {
        // After session/cancel the protocol wants every pending permission request answered `cancelled`.
        const choice = cancelled ? undefined : allow ? pick(['allow_once', 'allow_always']) : pick(['reject_once', 'reject_always']);
        reply({ outcome: choice ? { outcome: 'selected', optionId: choice.optionId } : { outcome: 'cancelled' } });
      };
      const toolCall = obj(params.toolCall) ?? {};
      const title = str(toolCall.title);
      if (opts.allowPermissions) {
        answer(true);
        return [];
      }
      if (opts.askPermission) {
        // "Always" is ours to remember (for this session key); the agent is only ever allowed once.
        const known = tools.get(str(toolCall.toolCallId) ?? '');
        const tool = str(obj(toolCall._meta)?.toolName) ?? (known && known.name !== 'tool' ? known.name : undefined) ?? str(toolCall.kind) ?? 'tool';
        const raw = obj(toolCall.rawInput);
        const input = raw && Object.keys(raw).length > 0 ? raw : (known?.input ?? {});
        void opts.askPermission({ tool, input, ...(title ? { title } : {}) }).then((verdict) => {
          if (!verdict.allow) denied.push(tool);
          if (!over) answer(verdict.allow);
        });
        return [];
      }
      answer(false);
      return [{ type: 'warning', message: `refused permission for ${title ?? 'a tool call'}: skipPermissions is false` }];
    },
    answered(msg) {
      over = true;
      const error = obj(msg.error);
      if (error) return [{ type: 'failure', ...classifiedError(error) }];
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
      if (stop === 'refusal') return [...events, { type: 'failure', kind: 'engine', message: 'the agent refused to answer (stopReason refusal)' }];
      if (stop === 'max_tokens' || stop === 'max_turn_requests') events.push({ type: 'warning', message: `the agent stopped early (${stop})` });
      // Qwen Code 0.24 ends its turn without a word when a tool is denied: say why, not "empty reply".
      if (!sawText && denied.length > 0 && stop !== 'cancelled')
        events.unshift(...say(joiner.text(`(The agent stopped: ${denied.join(', ')} was denied.)`, true)));
      return events;
    },
    cancel() {
      cancelled = true;
    },
    text: () => texts.join(''),
  };
}

/** An error answer of the agent, as the turn's failure: its message, and whether the model API failed. */
export function classifiedError(error: Record<string, unknown>): { message: string; kind: FailureKind } {
  const message = errorText(error);
  return { message, kind: classify(message) };
}

export function errorText(error: Record<string, unknown>): string {
  const data = obj(error.data);
  const details = str(data?.details) ?? str(data?.message) ?? (typeof error.data === 'string' ? error.data : undefined);
  const message = str(error.message) ?? 'error';
  const text = details && details !== message ? `${message}: ${details}` : message;
  // A model API's own error body passed through as the message (Gemini CLI 0.61): its status and message.
  const inner = obj(parseJsonLine(text.slice(text.indexOf('{')))?.error);
  const status = num(inner?.code);
  return status !== undefined && str(inner?.message) ? `API error ${status}: ${str(inner?.message)}` : text;
}

// --- internal ---

interface ToolState {
  name: string;
  input: unknown;
  announced: boolean;
  finished: boolean;
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
