import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { AgentEvent } from '../events.js';
import { acpErrorText, classifyAcpError } from './acp-session.js';
import { type AcpUpdateReader, createAcpUpdateReader } from './acp-updates.js';
import { arr, obj, str } from './parse-helpers.js';

/**
 * One prompt of an ACP session, as agent events: the agent's `session/update` notifications
 * (read by acp-updates.ts), its permission requests (allowed, asked or refused), and the prompt's
 * answer (usage, its stop reason). The session around it (acp-session.ts) routes to it what
 * belongs to the prompt; a resident agent gets a fresh one per turn.
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
  const updates = createAcpUpdateReader();
  const texts: string[] = [];
  let cancelled = false;
  let over = false;
  /** The tools the person denied (a silent stop after a denial is explained). */
  const denied: string[] = [];
  const said = (events: AgentEvent[]) => {
    for (const e of events) if (e.type === 'text') texts.push(e.delta);
    return events;
  };
  return {
    onUpdate: (u) => said(updates.read(u)),
    onPermission: (params, reply) =>
      answerPermission(params, reply, opts, updates, { cancelled: () => cancelled, over: () => over, denied: (tool) => denied.push(tool) }),
    answered(msg) {
      over = true;
      const error = obj(msg.error);
      if (error) return [{ type: 'failure', kind: classifyAcpError(acpErrorText(error)), message: acpErrorText(error) }];
      return said(promptEndEvents(obj(msg.result) ?? {}, updates, denied));
    },
    cancel() {
      cancelled = true;
    },
    text: () => texts.join(''),
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

/** A permission request is allowed (skipPermissions), asked of the person, or rejected. */
function answerPermission(
  params: Record<string, unknown>,
  reply: (result: Record<string, unknown>) => void,
  opts: AcpTurnOptions,
  updates: AcpUpdateReader,
  state: { cancelled(): boolean; over(): boolean; denied(tool: string): void },
): AgentEvent[] {
  const options = arr(params.options).map((o) => obj(o) ?? {});
  const pick = (kinds: string[]) => kinds.map((k) => options.find((o) => o.kind === k)).find(Boolean);
  const answer = (allow: boolean) => {
    // After session/cancel the protocol wants every pending permission request answered `cancelled`.
    const choice = state.cancelled() ? undefined : allow ? pick(['allow_once', 'allow_always']) : pick(['reject_once', 'reject_always']);
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
    const known = updates.tool(str(toolCall.toolCallId) ?? '');
    const tool = str(obj(toolCall._meta)?.toolName) ?? (known && known.name !== 'tool' ? known.name : undefined) ?? str(toolCall.kind) ?? 'tool';
    const raw = obj(toolCall.rawInput);
    const input = raw && Object.keys(raw).length > 0 ? raw : (known?.input ?? {});
    void opts.askPermission({ tool, input, ...(title ? { title } : {}) }).then((verdict) => {
      if (!verdict.allow) state.denied(tool);
      if (!state.over()) answer(verdict.allow);
    });
    return [];
  }
  answer(false);
  return [{ type: 'warning', message: `refused permission for ${title ?? 'a tool call'}: skipPermissions is false` }];
}
