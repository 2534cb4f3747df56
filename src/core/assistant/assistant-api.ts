import type { BudgetState } from '../access/budget.js';
import type { AnswerOutcome, AnswerRequest } from '../approvals/approvals.js';
import type { ConfigSource } from '../config/source.js';
import type { EngineRunner } from '../engines/engine-runner.js';
import type { StreamEvent } from '../events.js';
import type { SentFiles } from '../files/sent-files.js';
import type { ActivityRecord, Metrics } from '../store/types.js';
import type { ChatSessions } from './chat-sessions.js';
import type { CommandResult } from '../commands/command-table.js';
import type { AssistantStatus, ChatOptions, CommandOptions, Refusal } from './turn-options.js';

/**
 * The chat core as its callers see it: the terminal, the HTTP server, the channels and the
 * scheduler. createAssistant (assistant.ts) builds one.
 */
export interface Assistant {
  chat(message: string, opts?: ChatOptions): AsyncIterable<StreamEvent>;
  /** A native engine command (POST /command): never sent as prompt text. */
  command(name: string, args: string | undefined, opts?: ChatOptions): AsyncIterable<StreamEvent>;
  /** A slash command; recorded as an activity event like a turn (`source`/`sender` as in ChatOptions). */
  runCommand(line: string, opts?: CommandOptions): Promise<CommandResult>;
  /** Clear the engine session and history of a key (aborting its running turn first). */
  reset(key: string): Promise<void>;
  /** Cancel the running turn of a key; true when one was running. History is kept. */
  abort(key: string): boolean;
  /** Whether a turn of the key is running now (a client that reloads follows it: the history says so). */
  isRunning(key: string): boolean;
  /** Answer an approval request of a running turn (POST /approve, /allow, /deny, the terminal). */
  answerApproval(answer: AnswerRequest): AnswerOutcome;
  /** Whether a slash command line is answered at once (/stop, /allow, /deny), not queued behind the session's turn. */
  runsAtOnce(line: string): boolean;
  status(): AssistantStatus;
  /** Why the configured engine cannot start (its program is not found), with the fix; undefined when it can. */
  engineWarning(): string | undefined;
  onActivity(listener: (record: ActivityRecord) => void): () => void;
  recentActivity(limit: number): Promise<ActivityRecord[]>;
  metrics(): Promise<Metrics>;
  /** Record a message refused before any turn (live on onActivity, like a turn). */
  recordRefusal(refusal: Refusal): Promise<void>;
  /** Today's spending against `access.dailyBudgetUsd`. */
  budget(): Promise<BudgetState>;
  /**
   * Let running turns finish for up to `graceMs`, then abort what is left, queued turns too; their
   * completion says `Aborted: <why>` (default: the gateway is shutting down).
   */
  drain(graceMs: number, why?: string): Promise<void>;
  readonly config: ConfigSource;
  readonly engine: EngineRunner;
  /** Named sessions per chat, and every session key (GET /api/sessions). */
  readonly sessions: ChatSessions;
  /** Files the agent sent, kept for delivery and download (GET /api/files/…). */
  readonly files: SentFiles;
}
