import type { Assistant } from '../core/assistant/assistant.js';
import type { ApprovalDecision, ApprovalRequest } from '../core/approvals/approvals.js';

/**
 * `service chat` answers an engine's `approval_request` inline: the request is shown (by the
 * renderer), and the next line of input answers it: y (allow), n (deny), a (allow this tool for
 * the rest of the session). An empty line denies (`[y/N/a]`: the safe side is the default); any
 * other line asks again. Input that ends first denies: nobody is left to answer.
 *
 * The terminal user is the owner, so the answer is privileged. Several requests at once are
 * answered oldest first, each shown again when its turn comes.
 */
export interface InlineApprovals {
  /** A request arrived in the turn's stream (already rendered). */
  request(request: ApprovalRequest): void;
  /** A line of input: true when it was taken as an answer (or a retry of one). */
  offer(line: string): boolean;
  /** Whether a request waits for its answer (the next line is for it, not for the assistant). */
  waiting(): boolean;
  /** No more input will come: what waits is denied, and later requests are denied at once. */
  endOfInput(): void;
  /** The turn ended: what it asked is settled already (denied by the registry). */
  turnEnded(): void;
}

export interface InlineApprovalsDeps {
  assistant: Pick<Assistant, 'answerApproval'>;
  sessionKey: string;
  /** Show the question for the oldest waiting request (a prompt on a terminal). */
  ask(request: ApprovalRequest): void;
  /** Show the outcome of an answer (the registry's text) or a hint. */
  say(text: string): void;
}

export const APPROVAL_QUESTION = 'allow? [y/N/a] ';
const HINT = 'Answer y (allow), n (deny) or a (allow this tool for the rest of the session).';

/** y/yes/allow → allow; n/no/deny or an empty line → deny; a/always → allow_always; else undefined. */
export function parseApprovalAnswer(line: string): ApprovalDecision | undefined {
  const word = line.trim().toLowerCase().replace(/^\//, '').replace(/\s+/g, ' ');
  if (['y', 'yes', 'allow'].includes(word)) return 'allow';
  if (['', 'n', 'no', 'deny'].includes(word)) return 'deny';
  if (['a', 'always', 'allow always'].includes(word)) return 'allow_always';
  return undefined;
}

export function createInlineApprovals(deps: InlineApprovalsDeps): InlineApprovals {
  const queue: ApprovalRequest[] = [];
  let inputEnded = false;

  const settle = (request: ApprovalRequest, decision: ApprovalDecision) => {
    const out = deps.assistant.answerApproval({ sessionKey: deps.sessionKey, id: request.id, decision, privileged: true });
    deps.say(out.text);
  };
  const next = () => {
    const head = queue[0];
    if (head) deps.ask(head);
  };

  return {
    request(request) {
      if (inputEnded) {
        deps.say('(no input left to answer it: denied)');
        settle(request, 'deny');
        return;
      }
      queue.push(request);
      if (queue.length === 1) deps.ask(request);
    },
    offer(line) {
      const head = queue[0];
      if (!head) return false;
      const decision = parseApprovalAnswer(line);
      if (!decision) {
        deps.say(HINT);
        deps.ask(head);
        return true;
      }
      queue.shift();
      settle(head, decision);
      next();
      return true;
    },
    waiting: () => queue.length > 0,
    endOfInput() {
      inputEnded = true;
      const left = queue.splice(0);
      if (left.length > 0) deps.say('(input ended before an answer: denied)');
      for (const request of left) settle(request, 'deny');
    },
    turnEnded() {
      queue.length = 0;
    },
  };
}
