import { randomInt } from 'node:crypto';
import { DETAIL_MAX, describeToolCall } from './summary.js';

/**
 * Chat approvals (skipPermissions: false): an engine that wants to run a tool asks the person who
 * started the turn, through the turn's stream, and waits for `/allow`, `/deny` or `/allow always`
 * (or `POST /approve`). One registry per assistant; each turn opens a handle on it. A request is
 * part of its turn: the turn's abort or end, the asker going away, or no answer within
 * `approvalTimeoutSeconds` denies it, so an engine is never left waiting.
 */
export type ApprovalDecision = 'allow' | 'deny' | 'allow_always';
export const APPROVAL_DECISIONS = ['allow', 'deny', 'allow_always'] as const;

/** What the person is shown (the `approval_request` stream event, without its type; see summary.ts). */
export interface ApprovalRequest {
  id: string;
  tool: string;
  /** The command, file or input on one line, invisible characters as escapes, secrets masked; at most PROMPT_MAX characters. */
  summary: string;
  /** The whole of it, escaped and masked the same way (`/approval <id>` shows it). */
  detail: string;
  /** Whether `summary` is only the start of `detail` (a prompt says so). */
  cut: boolean;
  /** It touches the assistant's own files on a turn a non-admin started: only an admin may allow it. */
  adminOnly?: true;
}

/** What the engine is told. */
export interface ApprovalVerdict {
  allow: boolean;
  /** Why, in words the model can act on (a denial's reason). */
  message: string;
}

export interface ApprovalAsk {
  tool: string;
  input: unknown;
  /** A description the engine already made (ACP's tool call title), used when the input says less. */
  title?: string;
  /** The asker went away (the helper's connection closed): the request is withdrawn as denied. */
  signal?: AbortSignal;
}

/** One turn's side: engines ask through it. */
export interface TurnApprovals {
  /** Resolves with the decision; never rejects. */
  ask(request: ApprovalAsk): Promise<ApprovalVerdict>;
  /** The turn is over: what is still waiting is denied, later asks are denied at once. */
  close(): void;
}

export interface TurnApprovalOptions {
  sessionKey: string;
  /** `<channel>:<userId>` of who started the turn; absent for the HTTP API and the terminal (the owner). */
  requester?: string;
  /** Whether an admin (or the owner) started the turn; default: no requester, i.e. the owner. */
  startedByAdmin?: boolean;
  /** Whether someone can see and answer requests (false for scheduled tasks: denied at once). */
  canAsk: boolean;
  /** Show a request to the person (the turn's stream). */
  emit(request: ApprovalRequest): void;
  /** The turn's abort. */
  signal: AbortSignal;
}

export interface AnswerRequest {
  sessionKey: string;
  /** Which request; may be left out when exactly one is waiting in the session. */
  id?: string;
  decision: ApprovalDecision;
  /** `<channel>:<userId>` of who answers from a chat. */
  caller?: string;
  /** An admin in a chat, or the owner (terminal, HTTP API): may answer any request. */
  privileged: boolean;
}

export type AnswerOutcome =
  | { ok: true; request: ApprovalRequest; decision: ApprovalDecision; text: string }
  | { ok: false; reason: 'none_waiting' | 'unknown_id' | 'ambiguous' | 'not_allowed'; text: string };

export interface Approvals {
  openTurn(turn: TurnApprovalOptions): TurnApprovals;
  answer(answer: AnswerRequest): AnswerOutcome;
  /** Requests waiting in a session, oldest first. */
  waiting(sessionKey: string): ApprovalRequest[];
  /** How many requests wait for an answer, in every session. */
  waitingCount(): number;
  /** Forget what `/allow always` allowed in a session (the session was reset). */
  forget(sessionKey: string): void;
}

export interface ApprovalsDeps {
  /** `approvalTimeoutSeconds`, read when a request is made. */
  timeoutMs(): number;
  /** Mask secret values in what is shown. */
  mask(text: string): string;
  /** Whether a tool call's input names the assistant's own files (service.yaml, .env, .service/): admin-only on a non-admin's turn. */
  touchesControlFiles?(text: string): boolean;
}

/** Ids people type after /allow: lower case, no lookalikes. */
const ID_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const ID_LENGTH = 5;

interface Waiting {
  request: ApprovalRequest;
  sessionKey: string;
  requester: string | undefined;
  /** `holder`: for whom an `/allow always` holds (EVERYONE, or the requester). */
  settle(verdict: ApprovalVerdict, always?: { holder: string }): void;
}

/** The holder of an `/allow always` an admin (or the owner) gave: everyone in the session. */
const EVERYONE = '*';

/** What a non-admin hears when allowing a call on the assistant's own files. */
export const ADMIN_ONLY_TEXT =
  "This tool call touches the assistant's own settings or state (service.yaml, .env, .service/): only an admin can allow it. You may deny it.";

export function createApprovals(deps: ApprovalsDeps): Approvals {
  /** Waiting requests by id, in the order they were made. */
  const waiting = new Map<string, Waiting>();
  const always = createAlwaysAllowed();

  const newId = () => {
    for (;;) {
      let id = '';
      for (let i = 0; i < ID_LENGTH; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
      if (!waiting.has(id)) return id;
    }
  };
  const inSession = (key: string) => [...waiting.values()].filter((w) => w.sessionKey === key);

  const openTurn = (turn: TurnApprovalOptions): TurnApprovals => {
    const mine = new Set<Waiting>();
    let closed: string | undefined;
    const denyAll = (why: string) => {
      closed ??= why;
      for (const w of [...mine]) w.settle({ allow: false, message: why });
    };
    const onAbort = () => denyAll('The turn was stopped before anyone answered; the tool call was denied.');
    turn.signal.addEventListener('abort', onAbort, { once: true });
    if (turn.signal.aborted) onAbort();

    const ask = (req: ApprovalAsk): Promise<ApprovalVerdict> => {
      if (closed) return Promise.resolve({ allow: false, message: closed });
      const text = describeToolCall(req.input, req.title, deps.mask);
      const refused = refuseUnasked(req.tool, turn.canAsk, text.detail.length);
      if (refused) return Promise.resolve(refused);
      const adminOnly = turn.startedByAdmin === false && deps.touchesControlFiles?.(`${compactInput(req.input)} ${req.title ?? ''}`) === true;
      // An /allow always never covers a call on the assistant's own files in a non-admin's turn: that one is always asked.
      if (!adminOnly && always.allows(turn.sessionKey, req.tool, turn.requester || undefined)) {
        return Promise.resolve({ allow: true, message: `${req.tool} is allowed for the rest of this session.` });
      }
      return new Promise<ApprovalVerdict>((resolve) => {
        const request: ApprovalRequest = { id: newId(), tool: req.tool, ...text, ...(adminOnly ? { adminOnly: true as const } : {}) };
        const timer = setTimeout(() => {
          const seconds = Math.round(deps.timeoutMs() / 1000);
          entry.settle({ allow: false, message: `No answer within ${seconds} s: the person did not approve ${req.tool}, so it was denied.` });
        }, deps.timeoutMs());
        timer.unref();
        const onGone = () => entry.settle({ allow: false, message: 'The permission request was withdrawn; the tool call was denied.' });
        const entry: Waiting = {
          request,
          sessionKey: turn.sessionKey,
          requester: turn.requester || undefined,
          settle(verdict, allowAlways) {
            if (!waiting.has(request.id)) return;
            waiting.delete(request.id);
            mine.delete(entry);
            clearTimeout(timer);
            req.signal?.removeEventListener('abort', onGone);
            if (allowAlways) always.add(turn.sessionKey, req.tool, allowAlways.holder);
            resolve(verdict);
          },
        };
        waiting.set(request.id, entry);
        mine.add(entry);
        req.signal?.addEventListener('abort', onGone, { once: true });
        if (req.signal?.aborted) return onGone();
        turn.emit(request);
      });
    };

    return {
      ask,
      close() {
        turn.signal.removeEventListener('abort', onAbort);
        denyAll('The turn ended before anyone answered; the tool call was denied.');
      },
    };
  };

  const answer = (a: AnswerRequest): AnswerOutcome => {
    const entry = pickWaiting(inSession(a.sessionKey), a.id);
    if (!('request' in entry)) return entry;
    if (!a.privileged && (entry.requester === undefined || entry.requester !== a.caller)) {
      return { ok: false, reason: 'not_allowed', text: 'Only the person who started this turn (or an admin) can answer this approval.' };
    }
    const { request } = entry;
    const allow = a.decision !== 'deny';
    if (allow && request.adminOnly && !a.privileged) {
      return { ok: false, reason: 'not_allowed', text: ADMIN_ONLY_TEXT };
    }
    // The owner's or an admin's "always" holds for everyone in the session; a member's for their own turns.
    const holder = a.privileged || entry.requester === undefined ? EVERYONE : entry.requester;
    entry.settle(
      allow ? { allow: true, message: 'The person allowed this tool call.' } : { allow: false, message: `The person denied this ${request.tool} call.` },
      a.decision === 'allow_always' ? { holder } : undefined,
    );
    return { ok: true, request, decision: a.decision, text: answeredText(request, a.decision, holder) };
  };

  return {
    openTurn,
    answer,
    waiting: (key) => inSession(key).map((w) => w.request),
    waitingCount: () => waiting.size,
    forget: (key) => always.forget(key),
  };
}

// --- internal ---

/**
 * Tools allowed for the rest of a session (`/allow always`), by session key, then tool, then for
 * whom: a person's own answer holds for their turns only (a group's other members still get
 * asked); an admin's holds for everyone in the session.
 */
function createAlwaysAllowed() {
  const always = new Map<string, Map<string, Set<string>>>();
  return {
    allows(key: string, tool: string, requester: string | undefined): boolean {
      const holders = always.get(key)?.get(tool);
      return holders !== undefined && (holders.has(EVERYONE) || (requester !== undefined && holders.has(requester)));
    },
    add(key: string, tool: string, holder: string): void {
      const tools = always.get(key) ?? new Map<string, Set<string>>();
      tools.set(tool, (tools.get(tool) ?? new Set()).add(holder));
      always.set(key, tools);
    },
    forget(key: string): void {
      always.delete(key);
    },
  };
}

/** The verdict for a call no person gets to see: no one can answer in this turn, or it is too long to review. */
function refuseUnasked(tool: string, canAsk: boolean, detailLength: number): ApprovalVerdict | undefined {
  if (!canAsk) {
    return {
      allow: false,
      message: `No one can approve tool calls in this turn (a scheduled task), so ${tool} was denied. Set skipPermissions: true, or allow the tool in the engine's own settings.`,
    };
  }
  if (detailLength > DETAIL_MAX) {
    return {
      allow: false,
      message: `The ${tool} call is ${detailLength} characters long, too long for a person to review in a chat (at most ${DETAIL_MAX}), so it was denied unseen. Split it into shorter steps.`,
    };
  }
  return undefined;
}

/** The request an answer is for: the one with this id, or the only one waiting in the session. */
function pickWaiting(here: Waiting[], id: string | undefined): Waiting | Extract<AnswerOutcome, { ok: false }> {
  if (id !== undefined) {
    const entry = here.find((w) => w.request.id === id.trim().toLowerCase());
    return entry ?? { ok: false, reason: 'unknown_id', text: `No approval ${id} is waiting in this session (it may have been answered or timed out).` };
  }
  if (here.length > 1) {
    const lines = here.map((w) => `  ${w.request.id}  ${w.request.tool}: ${w.request.summary}`);
    return {
      ok: false,
      reason: 'ambiguous',
      text: `${here.length} approvals are waiting; answer one with its id (/allow <id>, /deny <id>):\n${lines.join('\n')}`,
    };
  }
  return here[0] ?? { ok: false, reason: 'none_waiting', text: 'Nothing is waiting for an approval in this session.' };
}

function answeredText(request: ApprovalRequest, decision: ApprovalDecision, holder: string): string {
  const what = `${request.tool}: ${request.summary}`;
  if (decision === 'deny') return `Denied ${what}`;
  if (decision === 'allow') return `Allowed ${what}`;
  const whom = holder === EVERYONE ? 'for everyone in this session' : 'for your own turns in this session (an admin can allow it for everyone)';
  return `Allowed ${what}\n${request.tool} is allowed without asking ${whom}, until /reset.`;
}

function compactInput(input: unknown): string {
  try {
    return JSON.stringify(input) ?? '';
  } catch {
    return String(input);
  }
}
