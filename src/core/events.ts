/**
 * The internal vocabulary engines produce (AgentEvent) and the wire format clients receive
 * (StreamEvent, exactly the spec's table). Wire events are built from agent events in one place,
 * the chat core.
 */
export type AgentEvent =
  /** The engine-native session id, as soon as it is known. */
  | { type: 'session'; sessionId: string }
  /** Assistant text as it arrives (a delta or a whole block). */
  | { type: 'text'; delta: string }
  | { type: 'tool_call'; callId?: string; name: string; input: unknown }
  | { type: 'tool_result'; callId?: string; output: string; isError?: boolean }
  | { type: 'usage'; inputTokens?: number; outputTokens?: number; costUsd?: number; numTurns?: number }
  /** The engine's own final answer of the turn (replaces the text accumulated so far). */
  | { type: 'final'; text: string }
  | { type: 'warning'; message: string }
  /** The engine reported a failure (not terminal: the process outcome decides). */
  | { type: 'failure'; message: string; status?: number; kind: FailureKind }
  /** Terminal: the turn finished. */
  | { type: 'done'; text: string; durationMs: number }
  /** Terminal: the turn failed. */
  | { type: 'error'; code: EngineErrorCode; message: string; kind?: FailureKind; stderrTail?: string; exitCode?: number | null };

/**
 * Why a run failed: `session_not_found` (resume of an id the engine does not know: retried fresh),
 * `provider` (the model endpoint: connection, 401/403, 429, 5xx: counts towards failover),
 * `engine` (anything else the engine reported).
 */
export type FailureKind = 'session_not_found' | 'provider' | 'engine';

/** `internal`: our side failed inside the run (a parser threw); the run ends, the process goes on. */
export type EngineErrorCode = 'spawn_failed' | 'exit_nonzero' | 'engine_reported' | 'aborted' | 'timeout' | 'internal';

export const TIMEOUT_MESSAGE = 'Agent invocation timed out';

/**
 * The spec's StreamEvent, as sent on the wire, plus one extension: `approval_request` (an engine
 * asks before running a tool, skipPermissions false; answered with POST /approve or /allow, /deny).
 * Clients that do not know it ignore it.
 */
export type StreamEvent =
  | { type: 'text'; content: string }
  | { type: 'approval_request'; id: string; tool: string; summary: string; detail: string; cut: boolean; adminOnly?: true }
  | { type: 'tool_call'; name: string; args: string }
  | { type: 'tool_result'; content: string }
  | { type: 'error'; message: string }
  | { type: 'done'; sessionId?: string; durationMs?: number; costUsd?: number; numTurns?: number }
  | FileEvent
  | ({ type: 'completion' } & Completion);

/**
 * A file the agent left in its turn's outbox, sent after the reply (before `done`). In this
 * process it names the kept copy (`id`, `path`); on the wire (HTTP) `url` replaces both
 * (server/routes/files.ts). A file that cannot be sent carries `error` instead (too big, too
 * many, empty).
 */
export interface FileEvent {
  type: 'file';
  name: string;
  size: number;
  mimeType: string;
  id?: string;
  path?: string;
  url?: string;
  error?: string;
}

export type CompletionStatus = 'completed' | 'silent' | 'failed' | 'aborted';

export interface Completion {
  status: CompletionStatus;
  /** completed: the reply; silent: the reply as given (`[PASS]`); aborted: the text that had arrived. */
  finalText?: string;
  sessionId?: string;
  durationMs?: number;
  /** failed: why; aborted: what stopped it. */
  message?: string;
}
