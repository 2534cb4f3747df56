import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { AgentEvent, FailureKind } from '../events.js';
import { classify, createCodexTurn, type CodexTurn } from './codex-app-server-turn.js';
import { createRpcPeer, type RpcHandler as Handler } from './json-rpc.js';
import { obj, str } from './parse-helpers.js';
import type { ConversationChannel, LineParser } from './runner.js';
import { createOpeningGate } from './warm/opening-gate.js';
import type { ResidentChannel, ResidentProtocol } from './warm/protocol.js';

export { classify } from './codex-app-server-turn.js';

/**
 * One turn of engine_d through `codex app-server` (Codex 0.169; the protocol is what
 * `codex app-server generate-ts` prints, fixtures in test/fixtures/engine_d-app-server): JSON-RPC
 * over the server's stdin/stdout, one message per line, without the `jsonrpc` member.
 * initialize (+ initialized), thread/start or thread/resume, turn/start; then item and turn
 * notifications become agent events, and the server's approval requests go to the person.
 * This is the path of `skipPermissions: false`: `codex exec` cannot ask.
 */
export interface CodexAppServerTurn {
  cwd: string;
  prompt: string;
  /** Absolute paths of image files (`localImage` inputs). */
  images: readonly string[];
  /** The thread to continue (a Codex thread id); without it a new thread is started. */
  threadId?: string;
  /** `approvalPolicy` and `sandbox` of thread/start and thread/resume. */
  approvalPolicy: 'untrusted' | 'on-request' | 'never';
  sandbox: 'read-only' | 'workspace-write' | 'danger-full-access';
  /** Ask the person; without it every approval request is declined (with a warning). */
  ask?: (request: ApprovalAsk) => Promise<ApprovalVerdict>;
  /** Our version, for initialize's clientInfo. */
  clientVersion: string;
}

type Phase = 'starting' | 'running' | 'done';

/** One turn: the thread opened (or continued), the prompt, and the end of the conversation with the turn. */
export function createCodexAppServerConversation(turn: CodexAppServerTurn): LineParser {
  let channel: ConversationChannel | undefined;
  let done = false;
  const end = (events: AgentEvent[]): AgentEvent[] => {
    done = true;
    channel?.end();
    return events;
  };
  const thread = createCodexThread(turn, (msg) => channel?.send(JSON.stringify(msg)), end);
  return {
    conversation: {
      open(c) {
        channel = c;
        thread.open(() => thread.startTurn(turn, turn.ask, end));
      },
      cancel() {
        if (!thread.interrupt()) end([]);
      },
    },
    parseLine: (line) => (done ? [] : thread.receive(line)),
    finish(exit) {
      if (done) return [];
      done = true;
      return [thread.exitFailure(exit)];
    },
  };
}

/** A resident app-server: the thread opened once, a `turn/start` per turn, `turn/interrupt` on abort. */
export function createCodexAppServerResident(start: Omit<CodexAppServerTurn, 'prompt' | 'images' | 'ask'>): ResidentProtocol {
  let channel: ResidentChannel | undefined;
  let running = false;
  const gate = createOpeningGate();
  const settle = (events: AgentEvent[]): AgentEvent[] => {
    running = false;
    return events;
  };
  const thread = createCodexThread(
    start,
    (msg) => channel?.send(JSON.stringify(msg)),
    (events) => {
      if (events.some((e) => e.type === 'failure' && e.kind === 'session_not_found')) channel?.broken('the thread was not found');
      return settle(events);
    },
  );
  return {
    open(c) {
      channel = c;
      thread.open(() => gate.opened(() => c.ready()));
    },
    parseLine: (line) => thread.receive(line),
    startTurn(turn) {
      running = true;
      const send = () => thread.startTurn({ prompt: turn.prompt, images: turn.images }, turn.approvals?.ask, settle);
      if (!gate.run(send)) return [];
      return thread.threadId ? [{ type: 'session', sessionId: thread.threadId }] : [];
    },
    interrupt() {
      if (thread.interrupt()) return;
      gate.drop();
      if (running) channel?.emit(settle([{ type: 'final', text: '' }]));
    },
    exited: (exit) => (running ? [thread.exitFailure(exit)] : []),
  };
}

interface CodexThread {
  /** initialize (+ initialized), then thread/start or thread/resume; `ready` once the thread is open. */
  open(ready: () => void): void;
  receive(line: string): AgentEvent[];
  /** `turn/start`; its events come out of `receive`, and `ended` gets the last ones. */
  startTurn(input: { prompt: string; images: readonly string[] }, ask: CodexAppServerTurn['ask'], ended: (events: AgentEvent[]) => AgentEvent[]): void;
  /** `turn/interrupt` of the running turn; false when none runs. */
  interrupt(): boolean;
  exitFailure(exit: { code: number | null; signal: string | null; stderrTail: string }): AgentEvent;
  readonly threadId: string | undefined;
}

/** The thread and its turns; `end` receives a failure of the thread itself (it could not be opened). */
function createCodexThread(
  opts: Omit<CodexAppServerTurn, 'prompt' | 'images' | 'ask'>,
  send: (msg: Record<string, unknown>) => void,
  end: (events: AgentEvent[]) => AgentEvent[],
): CodexThread {
  let phase: Phase = 'starting';
  let threadId: string | undefined;
  let onReady: () => void = () => undefined;
  let current: CodexTurn | undefined;
  const fail = (message: string, kind: FailureKind = 'engine'): AgentEvent[] => end([{ type: 'failure', kind, message }]);
  const settings = () => ({ cwd: opts.cwd, approvalPolicy: opts.approvalPolicy, sandbox: opts.sandbox });
  const peer = createRpcPeer({
    send,
    onRequest: (msg) => (current ? current.onServerRequest(msg) : refuse(msg)),
    onNotification: (method, params) => {
      if (!current || (params.threadId !== undefined && params.threadId !== null && params.threadId !== threadId)) return [];
      return current.onNotification(method, params);
    },
  });
  const refuse = (msg: Record<string, unknown>): AgentEvent[] => {
    send({ id: msg.id, error: { code: -32601, message: `Method not found: ${String(msg.method)}` } });
    return [];
  };
  const request = peer.request;

  const afterInitialize: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) return fail(`codex app-server refused initialize: ${errorText(error)}`);
    send({ method: 'initialized' });
    if (opts.threadId) {
      request('thread/resume', { threadId: opts.threadId, ...settings(), excludeTurns: true }, (reply) => {
        const err = obj(reply.error);
        // The engine runner starts a new thread after this, with the same warning as `codex exec resume`.
        if (err) return fail(`Codex has no session with that thread id: ${errorText(err)}`, 'session_not_found');
        return afterThread(reply);
      });
    } else request('thread/start', settings(), afterThread);
    return [];
  };

  const afterThread: Handler = (msg) => {
    const error = obj(msg.error);
    if (error) return fail(`codex app-server could not open a thread: ${errorText(error)}`, classify(errorText(error)));
    threadId = str(obj(obj(msg.result)?.thread)?.id);
    if (!threadId) return fail('codex app-server answered without a thread id');
    phase = 'running';
    onReady();
    return [{ type: 'session', sessionId: threadId }];
  };

  return {
    open(ready) {
      onReady = ready;
      request('initialize', { clientInfo: { name: 'service', title: null, version: opts.clientVersion }, capabilities: null }, afterInitialize);
    },
    receive: (line) => peer.receive(line),
    startTurn(input, ask, ended) {
      const turn = createCodexTurn(
        ask,
        (events) => {
          if (current === turn) current = undefined;
          return ended(events);
        },
        send,
      );
      current = turn;
      const items = [{ type: 'text', text: input.prompt, text_elements: [] }, ...input.images.map((path) => ({ type: 'localImage', path }))];
      request('turn/start', { threadId, input: items }, (reply) => {
        const err = obj(reply.error);
        if (err) return turn.end([{ type: 'failure', ...classified(errorText(err)) }]);
        turn.started(str(obj(obj(reply.result)?.turn)?.id), (turnId) => request('turn/interrupt', { threadId, turnId }, () => []));
        return [];
      });
    },
    interrupt() {
      if (phase !== 'running' || !current) return false;
      current.cancel((turnId) => request('turn/interrupt', { threadId, turnId }, () => []));
      return true;
    },
    exitFailure(exit) {
      const last =
        current?.lastError() ??
        exit.stderrTail
          .split('\n')
          .filter((l) => l.trim() && !/^WARNING: |codex could not find bubblewrap/i.test(l))
          .pop()
          ?.trim();
      const how = exit.code === null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
      return { type: 'failure', kind: last ? classify(last) : 'engine', message: `codex app-server ${how} before the turn ended${last ? `: ${last}` : ''}` };
    },
    get threadId() {
      return threadId;
    },
  };
}

// --- internal ---

function classified(message: string): { message: string; kind: FailureKind } {
  return { message, kind: classify(message) };
}

function errorText(error: Record<string, unknown>): string {
  return str(error.message) ?? JSON.stringify(error);
}
