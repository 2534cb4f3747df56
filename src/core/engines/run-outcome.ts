import { errorMessage } from '../errors.js';
import { type AgentEvent, type FailureKind, TIMEOUT_MESSAGE } from '../events.js';
import { describeExit } from './parse-helpers.js';
import type { ExitInfo } from './runner.js';

/**
 * What one engine run read from its parser (the text, a final answer, a failure the engine
 * reported, a parser that broke), and the one terminal event the run ends with. The runner
 * (runner.ts) owns the process; this is only the bookkeeping of its output.
 */
export interface RunOutput {
  /** Feed the parser's events for one line (or its finish); a parser that throws breaks the output: later reads are ignored. */
  parse(read: () => AgentEvent[]): void;
  /** Why the parser broke, when it did. */
  readonly parserFailure: string | undefined;
  /** The terminal event: `done` with the answer, or the error that ended the run. */
  end(run: RunEnd): AgentEvent;
}

export interface RunEnd {
  exit: { code: number | null; signal: string | null };
  exitInfo: ExitInfo;
  stopReason: 'aborted' | 'failed' | undefined;
  timedOut: boolean;
  /** The conversation ended the run itself (stdin closed): a non-zero exit after it is no failure. */
  conversationEnded: boolean;
  durationMs: number;
}

/** `name`: the program, for messages; `emit`: every event but `final` and `failure`, as read; `onBroken`: the parser threw (stop the engine). */
export function createRunOutput(name: string, emit: (e: AgentEvent) => void, onBroken: () => void): RunOutput {
  const texts: string[] = [];
  let finalText: string | undefined;
  let failure: { message: string; kind: FailureKind } | undefined;
  let parserFailure: string | undefined;
  const take = (events: AgentEvent[]) => {
    for (const e of events) {
      if (e.type === 'text') texts.push(e.delta);
      else if (e.type === 'final') finalText = e.text;
      else if (e.type === 'failure') failure = { message: e.message, kind: e.kind };
      if (e.type !== 'final' && e.type !== 'failure') emit(e);
    }
  };
  return {
    // A parser that throws (a bug, or output it cannot cope with) ends this run: the engine is
    // stopped and the turn fails with the reason; later lines are not read.
    parse(read) {
      if (parserFailure !== undefined) return;
      try {
        take(read());
      } catch (err) {
        parserFailure = `could not read the output of ${name}: ${errorMessage(err)}`;
        onBroken();
      }
    },
    get parserFailure() {
      return parserFailure;
    },
    end({ exit, exitInfo, stopReason, timedOut, conversationEnded, durationMs }) {
      if (stopReason === 'aborted') return { type: 'error', code: 'aborted', message: 'Aborted' };
      if (timedOut) return { type: 'error', code: 'timeout', message: TIMEOUT_MESSAGE };
      if (parserFailure !== undefined) {
        return { type: 'error', code: 'internal', message: parserFailure, kind: 'engine', stderrTail: exitInfo.stderrTail, exitCode: exit.code };
      }
      if (failure) {
        return { type: 'error', code: 'engine_reported', message: failure.message, kind: failure.kind, stderrTail: exitInfo.stderrTail, exitCode: exit.code };
      }
      if (exit.code !== 0 && !conversationEnded) {
        const last = exitInfo.stderrTail
          .split('\n')
          .filter((l) => l.trim())
          .pop();
        return {
          type: 'error',
          code: 'exit_nonzero',
          message: `${describeExit(name, exit)}${last ? `: ${last.trim()}` : ''}`,
          kind: 'engine',
          stderrTail: exitInfo.stderrTail,
          exitCode: exit.code,
        };
      }
      return { type: 'done', text: finalText ?? texts.join(''), durationMs };
    },
  };
}
