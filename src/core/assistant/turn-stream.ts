import type { AgentEvent, Completion, StreamEvent } from '../events.js';
import { mimeTypeOf, toSafeFileName } from '../files/file-names.js';
import type { Outbox } from '../files/outbox.js';
import type { SentFiles } from '../files/sent-files.js';
import type { EngineSession } from './turn-run.js';
import { abortMessage } from './turn-stop.js';

/**
 * Step "stream" of a turn (turn-pipeline.ts): the engine's events become the turn's stream.
 * text, tool_call, tool_result and error pass through; the turn always ends with `done` and then
 * exactly one `completion`. This is the only place that builds StreamEvents from AgentEvents.
 *
 * The reply (`completion.finalText`) is every `text` event of the turn joined, in order: the
 * text before a tool call is part of it. An engine's own final message is not used, because
 * each engine's carries only the last message (Claude's `result`, Codex's last
 * `agent_message`, OpenCode's last step, Cursor's `result`), and the parsers already drop the
 * repeats the real formats contain (see their fixtures).
 */
export interface TurnOutcome {
  completion: Completion;
  costUsd: number;
  /** The text the person saw arrive, whatever the ending (a failed completion carries none). */
  shown: string;
}

/** The reply that means "nothing to say" in smart group mode (documented in the im-adapter skill). */
export const SILENT_REPLY = '[PASS]';

export interface StreamEnd {
  started: number;
  now: () => number;
  signal: AbortSignal;
  session: EngineSession;
  /** Once the engine has exited, before the reply is complete: a notice to add to it (the check after a non-admin's turn). */
  afterEngine?: () => Promise<string | undefined>;
  outbox: Outbox;
  sentFiles: SentFiles;
}

export async function streamReply(events: AsyncIterable<AgentEvent>, end: StreamEnd, emit: (e: StreamEvent) => void): Promise<TurnOutcome> {
  const read = await readEvents(events, end.session, emit);
  // The reply is what the text events carried. An engine whose only text came in its final
  // message (none streamed) still gets it on the wire first, so the two never differ.
  if (read.streamed === '' && read.terminal?.type === 'done' && read.terminal.text.trim() !== '') {
    read.streamed = read.terminal.text;
    read.answer = read.streamed;
    emit({ type: 'text', content: read.streamed });
  }
  const notice = await end.afterEngine?.();
  if (notice) {
    const added = `${read.streamed === '' ? '' : '\n\n'}${notice}`;
    read.streamed += added;
    read.answer += added;
    emit({ type: 'text', content: added });
  }
  const durationMs = end.now() - end.started;
  await end.session.keep();
  const sessionId = end.session.id();
  const completion = complete(read, { sessionId, durationMs }, end.signal);
  if (completion.status === 'failed' && completion.message) emit({ type: 'error', message: completion.message });
  // Files go with a reply only: a failed, aborted or silent turn's outbox is discarded (with the workspace).
  if (completion.status === 'completed') for (const f of sendOutbox(end.outbox, end.sentFiles)) emit(f);
  emit({
    type: 'done',
    ...(sessionId ? { sessionId } : {}),
    durationMs,
    ...(read.costUsd !== undefined ? { costUsd: read.costUsd } : {}),
    ...(read.numTurns !== undefined ? { numTurns: read.numTurns } : {}),
  });
  emit({ type: 'completion', ...completion });
  return { completion, costUsd: read.costUsd ?? 0, shown: read.streamed };
}

// --- internal ---

type Terminal = Extract<AgentEvent, { type: 'done' | 'error' }>;

interface EngineRead {
  streamed: string;
  /** Text since the last tool call: the answer the assistant gave after using its tools. */
  answer: string;
  costUsd?: number;
  numTurns?: number;
  terminal?: Terminal;
}

async function readEvents(events: AsyncIterable<AgentEvent>, session: EngineSession, emit: (e: StreamEvent) => void): Promise<EngineRead> {
  const read: EngineRead = { streamed: '', answer: '' };
  try {
    for await (const e of events) {
      switch (e.type) {
        case 'session':
          await session.named(e.sessionId);
          break;
        case 'text':
          read.streamed += e.delta;
          read.answer += e.delta;
          emit({ type: 'text', content: e.delta });
          break;
        case 'tool_call':
          read.answer = '';
          emit({ type: 'tool_call', name: e.name, args: JSON.stringify(e.input ?? {}) });
          break;
        case 'tool_result':
          emit({ type: 'tool_result', content: e.output });
          break;
        case 'usage':
          if (e.costUsd !== undefined) read.costUsd = (read.costUsd ?? 0) + e.costUsd;
          if (e.numTurns !== undefined) read.numTurns = (read.numTurns ?? 0) + e.numTurns;
          break;
        case 'done':
        case 'error':
          read.terminal = e;
          break;
        default:
          break;
      }
    }
  } catch (err) {
    read.terminal = { type: 'error', code: 'spawn_failed', message: `turn failed: ${(err as Error).message}` };
  }
  return read;
}

function sendOutbox(outbox: Outbox, sentFiles: SentFiles): StreamEvent[] {
  const contents = outbox.collect();
  const skipped = contents.skipped.map(({ name, why }) => {
    const safe = toSafeFileName(name);
    return { name: safe, size: 0, mimeType: mimeTypeOf(safe), error: `not sent: ${why}` };
  });
  return [...sentFiles.keep(contents), ...skipped].map((f) => ({ type: 'file', ...f }));
}

function complete(read: EngineRead, meta: { sessionId: string | undefined; durationMs: number }, signal: AbortSignal): Completion {
  const { terminal, streamed, answer } = read;
  const base = { ...(meta.sessionId ? { sessionId: meta.sessionId } : {}), durationMs: meta.durationMs };
  if (!terminal) return { status: 'failed', message: 'the engine ended without a result', ...base };
  if (terminal.type === 'error') {
    if (terminal.code === 'aborted') return { status: 'aborted', finalText: streamed, message: abortMessage(signal, 'Aborted'), ...base };
    return { status: 'failed', message: terminal.message, ...base };
  }
  // Silent when the answer is [PASS], also after text written before a tool call ("let me check").
  if (answer.trim() === SILENT_REPLY) return { status: 'silent', finalText: SILENT_REPLY, ...base };
  if (streamed.trim() === '') return { status: 'failed', message: 'The engine returned an empty reply', ...base };
  return { status: 'completed', finalText: streamed, ...base };
}
