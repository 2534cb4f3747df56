import type { AgentEvent } from '../../events.js';
import type { ExitInfo } from '../runner.js';
import type { EngineInvocation, EngineTurn } from '../types.js';

/**
 * How an engine stays resident: one process per conversation that takes turn after turn
 * (docs/engines.md, "Warm engines"). The engine definition says how to start the process and
 * hands over the protocol it speaks; runner.ts owns the process, and the protocol only reads its
 * output and writes through the channel it is given, as a per-turn conversation does.
 */
export interface WarmMode {
  /**
   * Whether this turn can run on a resident process. False: it runs per turn (a native command
   * where the protocol has none; a session the resident mode cannot take over).
   */
  accepts?(turn: EngineTurn): boolean;
  /**
   * Whether a newly started process can continue a session made elsewhere (by a per-turn run, or a
   * process that ended). False: only a conversation the resident process started itself stays
   * warm; one with an older session runs per turn (default true).
   */
  readonly resumes?: boolean;
  /** argv and environment of the resident process, from the turn that starts it (no prompt). */
  buildInvocation(turn: EngineTurn): EngineInvocation;
  /** The protocol spoken with one process, for its whole life; `start` is the turn that starts it. */
  createProtocol(start: EngineTurn): ResidentProtocol;
}

/**
 * One resident process's side of the conversation. A turn ends with the first `final` or `failure`
 * event after `startTurn` (after an interrupt too: whatever the engine answers ends it).
 */
export interface ResidentProtocol {
  /** The process runs: write the opening messages (a handshake, the session). */
  open(channel: ResidentChannel): void;
  /** One line of the process's stdout → events of the current turn ([] between turns). */
  parseLine(line: string): AgentEvent[];
  /** Hand the engine a turn (its prompt; sent once the session is open). */
  startTurn(turn: EngineTurn): AgentEvent[];
  /** Ask the engine to stop the current turn, keeping the process (control_request, turn/interrupt, session/cancel, abort). */
  interrupt(): void;
  /** The process ended while a turn ran: what that turn reports (the engine's own error where it gave one). */
  exited(exit: ExitInfo): AgentEvent[];
  /** Before the process is stopped: let go of what the protocol holds (an HTTP connection). */
  close?(): void;
}

export interface ResidentChannel {
  /** Write one line to the process's stdin (a newline is added); ignored once it is closed. */
  send(line: string): void;
  /** Events that arrive outside parseLine (an HTTP answer, a person's approval later). */
  emit(events: AgentEvent[]): void;
  /**
   * The engine took the turn: its session is open and the prompt went in. A process that ends
   * before this failed to start, and the turn runs per turn instead, losing nothing.
   */
  ready(): void;
  /** The protocol cannot go on with this process (it is ended once the current turn is over). */
  broken(why: string): void;
}
