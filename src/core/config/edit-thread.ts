import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { AppError, ConfigError, errorMessage } from '../errors.js';
import { type MergeJob, mergeText } from './write-back.js';

/**
 * The YAML work of a PATCH (parse service.yaml, merge, render, line diff, parse the result) on a
 * worker thread: for a file of hundreds of KB it costs hundreds of ms, which on the event loop
 * would hold up every other request, /health included (issue 36). One thread, started on first
 * use, ended after a quiet minute; it keeps the process alive only while it has work.
 *
 * The thread runs the compiled config-edit-worker.js beside this module (dist/core/config/ for
 * the library, dist/bundle/ for the command line: scripts/bundle.mjs builds it there). Run from
 * the TypeScript sources, as the unit tests do, there is no such file and the same function runs
 * in this thread; a gateway process always has it.
 */
const WORKER_SCRIPT = new URL('./config-edit-worker.js', import.meta.url);
const IDLE_MS = 60_000;

export type MergedText = ReturnType<typeof mergeText>;

export interface EditRequest {
  id: number;
  job: MergeJob;
}

export type EditReply = { id: number; ok: true; result: MergedText } | { id: number; ok: false; error: WireError };

type WireError =
  | { kind: 'config'; file: string; problems: string[]; hint?: string }
  | { kind: 'app'; code: string; message: string; hint?: string }
  | { kind: 'other'; message: string };

/** `mergeText` off the event loop (in it when running from sources, see above). */
export function mergeOffThread(job: MergeJob): Promise<MergedText> {
  workerScriptExists ??= fs.existsSync(fileURLToPath(WORKER_SCRIPT));
  if (!workerScriptExists) return Promise.resolve().then(() => mergeText(job));
  if (!thread) {
    const started = new EditThread(() => {
      if (thread === started) thread = undefined;
    });
    thread = started;
  }
  return thread.run(job);
}

/** Errors cross the thread boundary as data and are rebuilt as the same classes on this side. */
export function errorToWire(err: unknown): WireError {
  if (err instanceof ConfigError) return { kind: 'config', file: err.file, problems: err.problems, ...(err.hint ? { hint: err.hint } : {}) };
  if (err instanceof AppError) return { kind: 'app', code: err.code, message: err.message, ...(err.hint ? { hint: err.hint } : {}) };
  return { kind: 'other', message: errorMessage(err) };
}

// --- internal ---

let workerScriptExists: boolean | undefined;
let thread: EditThread | undefined;

function errorFromWire(e: WireError): Error {
  if (e.kind === 'config') return new ConfigError(e.file, e.problems, e.hint);
  if (e.kind === 'app') return new AppError(e.code, e.message, e.hint === undefined ? {} : { hint: e.hint });
  return new Error(`config edit thread: ${e.message}`);
}

class EditThread {
  private readonly worker = new Worker(WORKER_SCRIPT);
  private readonly pending = new Map<number, { resolve: (r: MergedText) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  private idle: NodeJS.Timeout | undefined;

  constructor(private readonly gone: () => void) {
    this.worker.on('message', (reply: EditReply) => {
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (reply.ok) waiter?.resolve(reply.result);
      else waiter?.reject(errorFromWire(reply.error));
      if (this.pending.size === 0) this.rest();
    });
    this.worker.on('error', (err) => this.end(err));
    this.worker.on('exit', (code) => this.end(new Error(`config edit thread exited with code ${code}`)));
  }

  run(job: MergeJob): Promise<MergedText> {
    clearTimeout(this.idle);
    this.worker.ref();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, job } satisfies EditRequest);
    });
  }

  /** Idle: the thread no longer keeps the process alive, and ends after a quiet minute. */
  private rest(): void {
    this.worker.unref();
    this.idle = setTimeout(() => void this.worker.terminate(), IDLE_MS);
    this.idle.unref();
  }

  /** The thread is gone (ended when idle, or failed): what waits fails, the next merge starts a new one. */
  private end(err: Error): void {
    clearTimeout(this.idle);
    this.gone();
    for (const waiter of this.pending.values()) waiter.reject(err);
    this.pending.clear();
  }
}
