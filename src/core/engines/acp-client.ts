import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { AgentEvent, FailureKind } from '../events.js';
import { type AcpSessionSettings, createAcpSession } from './acp-session.js';
import { createAcpPrompt } from './acp-turn.js';
import type { ConversationChannel, ExitInfo, LineParser } from './runner.js';
import type { EngineTurn } from './types.js';
import { createOpeningGate } from './warm/opening-gate.js';
import type { ResidentChannel, ResidentProtocol } from './warm/protocol.js';

/**
 * The client side of the Agent Client Protocol, two ways: one turn per process (the runner closes
 * stdin once the prompt is answered), or a resident agent that keeps its session open and takes
 * a prompt per turn (warm engines). Both are the same session (acp-session.ts: opened, then
 * prompted) and the same mapping of a prompt (acp-turn.ts, reading updates with acp-updates.ts);
 * the runner owns the process, these only read lines and write through the channel they are given.
 */
export interface AcpTurn extends AcpSessionSettings {
  prompt: string;
  /** Chat approvals: ask the person and answer with what they decided (without it: reject). */
  askPermission?: (request: ApprovalAsk) => Promise<ApprovalVerdict>;
  /** How long history replayed after a `session/load` answer may keep arriving before the prompt is sent. */
  replayQuietMs?: number;
}

/** One turn: initialize, open the session, prompt, and end the conversation with the answer. */
export function createAcpConversation(turn: AcpTurn): LineParser {
  let channel: ConversationChannel | undefined;
  let done = false;
  const end = (events: AgentEvent[]): AgentEvent[] => {
    done = true;
    session.close();
    channel?.end();
    return events;
  };
  const session = createAcpSession(
    turn,
    (msg) => channel?.send(JSON.stringify(msg)),
    (message, kind: FailureKind = 'engine') => end([{ type: 'failure', kind, message }]),
  );
  const prompt = createAcpPrompt(turn);
  return {
    conversation: {
      open(c) {
        channel = c;
        session.open(() => {
          if (!done) session.prompt(turn.prompt, prompt, end);
        });
      },
      cancel() {
        if (!session.cancel()) end([]);
      },
    },
    parseLine: (line) => (done ? [] : session.receive(line)),
    finish(exit) {
      session.close();
      if (done) return [];
      done = true;
      return [exitFailure(exit)];
    },
  };
}

export interface AcpResidentOptions extends Omit<AcpTurn, 'prompt' | 'askPermission'> {
  /** The text a turn is prompted with (its images named, a native command as its slash command). */
  promptOf(turn: EngineTurn): string;
}

/** A resident agent: the session opened once, then one prompt per turn; an abort is `session/cancel`. */
export function createAcpResidentProtocol(opts: AcpResidentOptions): ResidentProtocol {
  let channel: ResidentChannel | undefined;
  const gate = createOpeningGate();
  let running = false;
  const session = createAcpSession(
    opts,
    (msg) => channel?.send(JSON.stringify(msg)),
    (message, kind: FailureKind = 'engine') => {
      channel?.broken(message);
      running = false;
      return [{ type: 'failure', kind, message }];
    },
  );
  return {
    open(c) {
      channel = c;
      session.open(() => gate.opened(() => c.ready()));
    },
    parseLine: (line) => session.receive(line),
    startTurn(turn) {
      const prompt = createAcpPrompt({ allowPermissions: opts.allowPermissions, ...(turn.approvals ? { askPermission: turn.approvals.ask } : {}) });
      running = true;
      const send = () =>
        session.prompt(opts.promptOf(turn), prompt, (events) => {
          running = false;
          return events.some((e) => e.type === 'failure') ? events : [...events, { type: 'final', text: prompt.text() }];
        });
      if (!gate.run(send)) return [];
      const id = session.sessionId;
      return id ? [{ type: 'session', sessionId: id }] : [];
    },
    interrupt() {
      if (session.cancel()) return;
      // Not prompted yet (the session is still opening): the turn ends here, the process stays.
      gate.drop();
      if (running) {
        running = false;
        channel?.emit([{ type: 'final', text: '' }]);
      }
    },
    exited: (exit) => (running ? [exitFailure(exit)] : []),
    close: () => session.close(),
  };
}

// --- internal ---

/** The agent exited before it answered: the failure, with its last line of stderr. */
function exitFailure(exit: ExitInfo): AgentEvent {
  const last = exit.stderrTail
    .split('\n')
    .filter((l) => l.trim())
    .pop()
    ?.trim();
  const how = exit.code === null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return { type: 'failure', kind: 'engine', message: `the ACP agent ${how} before it answered${last ? `: ${last}` : ''}` };
}
