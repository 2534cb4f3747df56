import type { AgentEvent } from '../../events.js';
import type { LineParser } from '../runner.js';
import type { EngineTurn } from '../types.js';
import type { ResidentChannel, ResidentProtocol } from './protocol.js';

/**
 * A resident engine that reads user messages as JSON lines on stdin and prints the same stream-json
 * it prints per turn, one `result` per message (Claude Code `-p --input-format stream-json`,
 * measured with 2.1.330): each turn gets a fresh parser of that output, and an abort is a
 * `control_request` of subtype `interrupt`, after which the engine ends the turn with a `result`
 * (`is_error`, `terminal_reason: aborted_streaming`) and waits for the next message.
 */
export interface StreamJsonOptions {
  /** A fresh parser of one turn's output (the engine's per-turn parser). */
  createParser(): LineParser;
  /** The text of the user message (the prompt with its images named). */
  promptOf(turn: EngineTurn): string;
}

export function createStreamJsonProtocol(opts: StreamJsonOptions): ResidentProtocol {
  let channel: ResidentChannel | undefined;
  let parser: LineParser | undefined;
  let interrupts = 0;
  const settles = (events: AgentEvent[]) => events.some((e) => e.type === 'final' || e.type === 'failure');
  return {
    open(c) {
      channel = c;
    },
    parseLine(line) {
      if (!parser) return [];
      // Nothing is printed before the first message: its first line says the engine took the turn.
      if (line.startsWith('{')) channel?.ready();
      const events = parser.parseLine(line);
      if (settles(events)) parser = undefined;
      return events;
    },
    startTurn(turn) {
      parser = opts.createParser();
      channel?.send(JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'text', text: opts.promptOf(turn) }] } }));
      return [];
    },
    interrupt() {
      channel?.send(JSON.stringify({ type: 'control_request', request_id: `interrupt-${++interrupts}`, request: { subtype: 'interrupt' } }));
    },
    exited(exit) {
      const events = parser?.finish(exit) ?? [];
      parser = undefined;
      return events;
    },
  };
}
