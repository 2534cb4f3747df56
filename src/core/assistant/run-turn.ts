import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { ServiceConfig } from '../config/schema.js';
import type { EngineRunner } from '../engines/engine-runner.js';
import type { AgentEvent, Completion, StreamEvent } from '../events.js';
import { mimeTypeOf, toSafeFileName } from '../files/file-names.js';
import { type Outbox, openOutbox } from '../files/outbox.js';
import type { SentFiles } from '../files/sent-files.js';
import type { ProcessIdentity, SessionStore } from '../store/types.js';
import { removeFiles, writeTurnImages, type DecodedImage } from './images.js';
import { abortMessage } from './turn-stop.js';

/**
 * One admitted turn, from the engine's events to the wire: text, tool_call, tool_result and
 * error pass through; the turn always ends with `done` and then exactly one `completion`.
 * This is the only place that builds StreamEvents from AgentEvents.
 *
 * The reply (`completion.finalText`) is every `text` event of the turn joined, in order: the
 * text before a tool call is part of it. An engine's own final message is not used, because
 * each engine's carries only the last message (Claude's `result`, Codex's last
 * `agent_message`, OpenCode's last step, Cursor's `result`), and the parsers already drop the
 * repeats the real formats contain (see their fixtures).
 */
export interface TurnRequest {
  key: string;
  prompt: string;
  images: readonly DecodedImage[];
  command?: { name: string; arguments?: string };
  signal: AbortSignal;
  onProcesses?: (processes: ProcessIdentity[]) => void;
  /** Chat approvals of this turn (the request reaches the stream as `approval_request`). */
  askApproval?: (request: ApprovalAsk) => Promise<ApprovalVerdict>;
  /** True once the key was reset while this turn ran: its engine session is not saved then. */
  overtaken?: () => boolean;
  /** The assistant's own files, out of the engine's reach where it has deny rules (a non-admin started the turn). */
  protectedPaths?: readonly string[];
  /** Once the engine has exited, before the reply is complete: a notice to add to it (the check after a non-admin's turn). */
  afterEngine?: () => Promise<string | undefined>;
}

export interface TurnDeps {
  config: ServiceConfig;
  store: SessionStore;
  engine: EngineRunner;
  imagesDir: string;
  /** Where each turn's outbox folder is made. */
  outboxDir: string;
  /** Where files the agent sent are kept for delivery. */
  sentFiles: SentFiles;
  now: () => number;
}

export interface TurnOutcome {
  completion: Completion;
  costUsd: number;
}

/** The reply that means "nothing to say" in smart group mode (documented in the im-adapter skill). */
export const SILENT_REPLY = '[PASS]';

export async function executeTurn(deps: TurnDeps, req: TurnRequest, emit: (e: StreamEvent) => void): Promise<TurnOutcome> {
  const started = deps.now();
  const { config, store } = deps;
  const saved = await store.getSession(req.key);
  // A session created by another engine means nothing to this one.
  const resumeId = saved && saved.engine === config.engine ? (saved.sessionId ?? undefined) : undefined;
  let sessionId = resumeId;
  let streamed = '';
  /** Text since the last tool call: the answer the assistant gave after using its tools. */
  let answer = '';
  let costUsd: number | undefined;
  let numTurns: number | undefined;
  let terminal: Extract<AgentEvent, { type: 'done' | 'error' }> | undefined;

  const rememberSession = async (id: string) => {
    if (id === sessionId && saved?.engine === config.engine) return;
    sessionId = id;
    if (req.overtaken?.()) return;
    const t = deps.now();
    await store.saveSession({ key: req.key, engine: config.engine, sessionId: id, createdAt: saved?.createdAt ?? t, updatedAt: t });
  };

  let files: string[] = [];
  let outbox: Outbox | undefined;
  try {
    files = writeTurnImages(deps.imagesDir, req.images);
    outbox = openOutbox(deps.outboxDir);
    const events = deps.engine.run({
      config,
      prompt: req.prompt,
      ...(resumeId ? { sessionId: resumeId } : {}),
      images: files,
      outboxDir: outbox.dir,
      ...(req.command ? { command: req.command } : {}),
      signal: req.signal,
      ...(req.onProcesses ? { onProcesses: req.onProcesses } : {}),
      ...(req.askApproval ? { askApproval: req.askApproval } : {}),
      ...(req.protectedPaths ? { protectedPaths: req.protectedPaths } : {}),
    });
    for await (const e of events) {
      switch (e.type) {
        case 'session':
          await rememberSession(e.sessionId);
          break;
        case 'text':
          streamed += e.delta;
          answer += e.delta;
          emit({ type: 'text', content: e.delta });
          break;
        case 'tool_call':
          answer = '';
          emit({ type: 'tool_call', name: e.name, args: JSON.stringify(e.input ?? {}) });
          break;
        case 'tool_result':
          emit({ type: 'tool_result', content: e.output });
          break;
        case 'usage':
          if (e.costUsd !== undefined) costUsd = (costUsd ?? 0) + e.costUsd;
          if (e.numTurns !== undefined) numTurns = (numTurns ?? 0) + e.numTurns;
          break;
        case 'done':
        case 'error':
          terminal = e;
          break;
        default:
          break;
      }
    }
  } catch (err) {
    terminal = { type: 'error', code: 'spawn_failed', message: `turn failed: ${(err as Error).message}` };
  } finally {
    removeFiles(files);
  }

  // The reply is what the text events carried. An engine whose only text came in its final
  // message (none streamed) still gets it on the wire first, so the two never differ.
  if (streamed === '' && terminal?.type === 'done' && terminal.text.trim() !== '') {
    streamed = terminal.text;
    answer = streamed;
    emit({ type: 'text', content: streamed });
  }
  const notice = await req.afterEngine?.();
  if (notice) {
    const added = `${streamed === '' ? '' : '\n\n'}${notice}`;
    streamed += added;
    answer += added;
    emit({ type: 'text', content: added });
  }
  const durationMs = deps.now() - started;
  if (sessionId && !req.overtaken?.()) {
    const t = deps.now();
    // A saved session keeps its createdAt (saveSession's contract), so `t` only counts when there
    // is none any more (reset meanwhile): no need to read it again.
    await store.saveSession({ key: req.key, engine: config.engine, sessionId, createdAt: t, updatedAt: t });
    await store.countSessionTurn(req.key);
  }
  const completion = complete(terminal, { streamed, answer }, { sessionId, durationMs }, req.signal);
  if (completion.status === 'failed' && completion.message) emit({ type: 'error', message: completion.message });
  // Files go with a reply only: a failed, aborted or silent turn's outbox is discarded.
  try {
    if (outbox && completion.status === 'completed') for (const f of sendOutbox(outbox, deps.sentFiles)) emit(f);
  } finally {
    outbox?.remove();
  }
  emit({
    type: 'done',
    ...(sessionId ? { sessionId } : {}),
    durationMs,
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(numTurns !== undefined ? { numTurns } : {}),
  });
  emit({ type: 'completion', ...completion });
  return { completion, costUsd: costUsd ?? 0 };
}

/** A turn that never reached the engine (busy, queue full, bad input): error → done → completion failed. */
export function rejectTurn(message: string, emit: (e: StreamEvent) => void): Completion {
  const completion: Completion = { status: 'failed', message };
  emit({ type: 'error', message });
  emit({ type: 'done', durationMs: 0 });
  emit({ type: 'completion', ...completion });
  return completion;
}

// --- internal ---

function sendOutbox(outbox: Outbox, sentFiles: SentFiles): StreamEvent[] {
  const contents = outbox.collect();
  const skipped = contents.skipped.map(({ name, why }) => {
    const safe = toSafeFileName(name);
    return { name: safe, size: 0, mimeType: mimeTypeOf(safe), error: `not sent: ${why}` };
  });
  return [...sentFiles.keep(contents), ...skipped].map((f) => ({ type: 'file', ...f }));
}

function complete(
  terminal: Extract<AgentEvent, { type: 'done' | 'error' }> | undefined,
  { streamed, answer }: { streamed: string; answer: string },
  meta: { sessionId: string | undefined; durationMs: number },
  signal: AbortSignal,
): Completion {
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
