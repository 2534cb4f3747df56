import type { AgentEvent } from '../events.js';
import { arr, createTextJoiner, num, obj, str } from './parse-helpers.js';

/**
 * What an ACP agent's `session/update` notifications say during the prompt, as agent events:
 * message chunks, tool calls (announced once, finished once), usage and cost. The conversation
 * (acp-client.ts) decides which updates count; this reads them.
 */
export interface AcpUpdateReader {
  read(update: Record<string, unknown>): AgentEvent[];
  /** A tool call seen so far (a permission request names it by id). */
  tool(toolCallId: string): ToolState | undefined;
  /** Whether the agent said anything. */
  readonly sawText: boolean;
  /** The turn's usage: the prompt answer's token counts (`quota`) where given, else what the updates added up to. */
  usageEvent(quota: Record<string, unknown> | undefined): AgentEvent;
  /** Text of our own in the reply, as a block of its own. */
  note(text: string): AgentEvent[];
}

export interface ToolState {
  name: string;
  input: unknown;
  announced: boolean;
  finished: boolean;
}

export function createAcpUpdateReader(): AcpUpdateReader {
  const joiner = createTextJoiner();
  const tools = new Map<string, ToolState>();
  let sawText = false;
  let usage = { input: 0, output: 0, cost: undefined as number | undefined };

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
    read(u) {
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
    },
    tool: (toolCallId) => tools.get(toolCallId),
    get sawText() {
      return sawText;
    },
    usageEvent: (quota) => ({
      type: 'usage',
      inputTokens: num(quota?.input_tokens) ?? usage.input,
      outputTokens: num(quota?.output_tokens) ?? usage.output,
      ...(usage.cost !== undefined ? { costUsd: usage.cost } : {}),
    }),
    note: (text) => joiner.text(text, true),
  };
}

// --- internal ---

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
