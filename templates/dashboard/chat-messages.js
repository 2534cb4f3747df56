// The messages of a conversation: the person's (plain text), the assistant's (Markdown, growing as
// `text` events arrive), the tool calls of a turn as lines that open, approval requests with their
// buttons, the files the agent sent, and system lines (slash-command answers). Everything the
// server sends reaches the page as text nodes: el() cannot set HTML, renderMarkdown builds nodes.
import { el, formatCost, formatDuration, formatTime } from './api.js';
import { renderMarkdown } from './chat-markdown.js';

/** What a tool line shows of a long result; the rest is cut (said so). */
const RESULT_SHOWN = 4_000;
const STATES = { queued: 'queued: starts when the turn before it ends', running: 'working…' };
const ANSWERED = { allow: 'Allowed.', deny: 'Denied.' };
/** A card still waiting when its turn ends: this page did not answer it, and cannot tell who did. */
const CLOSED = 'No longer waiting: the turn ended without an answer from this page (answered elsewhere, timed out, or the turn stopped).';

const when = (ts) => (ts ? el('time', { class: 'muted', text: formatTime(ts), attrs: { datetime: new Date(ts).toISOString() } }) : null);

export function formatSize(bytes) {
  if (bytes >= 1_048_576) return `${(bytes / 1_048_576).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} B`;
}

/** The person's message: its text as typed, and what was attached (image thumbnails, file names). */
export function userMessage(text, { attachments = [], ts } = {}) {
  const chips = attachments.map((a) =>
    el('li', { attrs: { title: `${a.name} (${formatSize(a.size)})` } }, [
      a.image ? el('img', { attrs: { src: a.dataUrl, alt: '' } }) : null,
      el('span', { text: a.name }),
    ]),
  );
  return el('li', { class: 'msg user' }, [
    el('div', { class: 'bubble' }, [text ? el('p', { class: 'plain', text }) : null, chips.length ? el('ul', { class: 'attached' }, chips) : null]),
    el('div', { class: 'msg-meta' }, [when(ts)]),
  ]);
}

/** A line from the service itself: a slash command's answer, a reset, a request that failed. */
export function systemLine(text, cls = '') {
  return el('li', { class: `msg system ${cls}`.trim() }, [el('p', { text })]);
}

/**
 * A reply that did not complete says why in its error line, in its completion's words: live, and
 * read back from the history after a reload (the stored entry's `status` and `message`). A failed
 * turn's `error` event may have said it already.
 */
function sayUnfinished(error, { status, message }) {
  if (status === 'aborted') error.textContent = message ?? 'Aborted';
  else if (status === 'failed' && !error.textContent) error.textContent = message ?? 'The turn failed';
}

/** A reply read back from the session's stored history (`{text, ts, status?, message?}`); one cut short is marked as it was live. */
export function storedReply({ text, ts, status, message }) {
  const error = el('p', { class: 'error' });
  sayUnfinished(error, { status, message });
  return el('li', { class: 'msg assistant', attrs: { 'data-state': status ?? 'stored' } }, [
    el('div', { class: 'bubble' }, [el('div', { class: 'reply md' }, renderMarkdown(text)), error]),
    el('div', { class: 'msg-meta' }, [status ? el('span', { class: `status-${status}`, text: status }) : null, when(ts)]),
  ]);
}

function toolLine(e) {
  const args = String(e.args ?? '');
  const result = el('pre', { class: 'tool-result', attrs: { hidden: '' } });
  const line = el('li', { class: 'tool' }, [
    el('details', {}, [
      el('summary', {}, [el('code', { text: e.name }), el('span', { class: 'muted', text: ` ${args.length > 80 ? `${args.slice(0, 80)}…` : args}` })]),
      el('pre', { class: 'tool-args', text: args }),
      result,
    ]),
  ]);
  return {
    line,
    hasResult: () => !result.hidden,
    setResult(content) {
      const text = String(content ?? '');
      result.textContent = text.length > RESULT_SHOWN ? `${text.slice(0, RESULT_SHOWN)}\n… (${text.length - RESULT_SHOWN} more characters not shown)` : text;
      result.hidden = false;
    },
  };
}

/**
 * An approval request, with the rules a chat channel's prompt follows: the tool and the whole
 * request (`detail`, where core already wrote what would not show as escapes) as text, the
 * buttons a channel offers, the time a person has, and that the same answers can be typed.
 * (A request only an admin may allow never reaches this page: the token holder is the owner.)
 */
function approvalCard(e, onApprove, timeoutSeconds) {
  const note = el('p', { class: 'approval-note', attrs: { 'aria-live': 'polite' } });
  const choices = [
    ['allow', 'Allow', ''],
    ['deny', 'Deny', 'secondary'],
    ['allow_always', `Always allow ${e.tool}`, 'secondary'],
  ];
  const buttons = choices.map(([decision, label, cls]) =>
    el('button', { class: cls, text: label, attrs: { type: 'button', 'data-decision': decision }, on: { click: () => void answer(decision) } }),
  );
  const card = el('div', { class: 'approval', attrs: { 'data-approval': e.id, 'data-answer': 'waiting' } }, [
    el('p', {}, [el('strong', { text: 'Approval needed: ' }), document.createTextNode('the assistant wants to use '), el('code', { text: e.tool })]),
    el('pre', { class: 'approval-summary', text: e.detail ?? e.summary }),
    el('div', { class: 'actions' }, buttons),
    el('p', {
      class: 'muted small approval-rules',
      text: `Or type /allow, /deny or /allow always. No answer within ${formatWait(timeoutSeconds)} means no. (request ${e.id})`,
    }),
    note,
  ]);
  const settle = (state, text) => {
    card.dataset.answer = state;
    note.textContent = text;
    for (const b of buttons) b.disabled = true;
  };
  const answer = async (decision) => {
    for (const b of buttons) b.disabled = true;
    try {
      await onApprove(e.id, decision);
      settle(decision, ANSWERED[decision] ?? `Allowed: ${e.tool} runs without asking for the rest of this conversation.`);
    } catch (err) {
      // 404: answered elsewhere (/allow, another tab) or timed out; anything else may be tried again.
      if (err.status === 404) settle('gone', err.message);
      else {
        note.textContent = err.message;
        for (const b of buttons) b.disabled = false;
      }
    }
  };
  return {
    card,
    id: e.id,
    /** Answered by a typed `/allow`, `/deny` or `/allow always` in this page: the command's answer. */
    answered: (decision, text) => settle(decision, text),
    close: () => card.dataset.answer === 'waiting' && settle('closed', CLOSED),
  };
}

/** The channels' wording of the time a person has (approval-prompt.ts). */
function formatWait(seconds) {
  return seconds < 120 ? `${Math.round(seconds)} s` : `${Math.round(seconds / 60)} min`;
}

function fileLine(e) {
  // The gateway's download route only (a relative URL with the file's own token), never another target.
  if (!String(e.url ?? '').startsWith('/api/files/'))
    return el('li', { class: 'file failed' }, [el('span', { text: e.name }), el('span', { class: 'error', text: ` ${e.error ?? 'not sent'}` })]);
  return el('li', { class: 'file' }, [
    el('a', { text: e.name, attrs: { href: e.url, download: e.name } }),
    el('span', { class: 'muted', text: ` ${formatSize(e.size)} · ${e.mimeType}` }),
  ]);
}

/**
 * The assistant's side of one turn, fed with the turn's StreamEvents. `onApprove(id, decision)`
 * answers an approval request. It starts `queued` (another turn of the conversation runs) or
 * `running`, and ends in the completion's status, or `lost` when the stream was cut.
 */
export function assistantTurn({ onApprove, state = 'running', approvalTimeoutSeconds = 300 }) {
  const pill = el('span', { class: 'pill turn-state' });
  const tools = el('ul', { class: 'tool-lines' });
  const approvals = el('div', { class: 'approvals' });
  const reply = el('div', { class: 'reply md' });
  const files = el('ul', { class: 'files' });
  const error = el('p', { class: 'error' });
  const meta = el('div', { class: 'msg-meta turn-meta' });
  const node = el('li', { class: 'msg assistant' }, [el('div', { class: 'bubble' }, [pill, tools, approvals, reply, files, error]), meta]);
  const cards = [];
  let text = '';
  let frame = 0;
  let lastTool;
  let done = {};

  const paint = () => {
    cancelAnimationFrame(frame);
    frame = 0;
    reply.replaceChildren(...renderMarkdown(text));
  };
  const setState = (next) => {
    node.dataset.state = next;
    pill.textContent = STATES[next] ?? next;
    pill.hidden = !(next in STATES);
  };
  setState(state);

  const finish = (c) => {
    if (c.status === 'completed' && typeof c.finalText === 'string') text = c.finalText;
    paint();
    for (const card of cards) card.close();
    setState(c.status);
    if (c.status === 'silent') reply.replaceChildren(el('p', { class: 'muted', text: 'No reply: the assistant passed ([PASS]).' }));
    sayUnfinished(error, c);
    const parts = [c.status, c.durationMs !== undefined ? formatDuration(c.durationMs) : null, done.costUsd !== undefined ? formatCost(done.costUsd) : null];
    meta.replaceChildren(el('span', { class: `status-${c.status}`, text: parts.filter(Boolean).join(' · ') }), when(Date.now()));
  };

  return {
    node,
    setState,
    get state() {
      return node.dataset.state;
    },
    event(e) {
      if (node.dataset.state === 'queued') setState('running');
      if (e.type === 'text') {
        text += e.content;
        if (!frame) frame = requestAnimationFrame(paint);
      } else if (e.type === 'tool_call') {
        lastTool = toolLine(e);
        tools.append(lastTool.line);
      } else if (e.type === 'tool_result') {
        if (!lastTool || lastTool.hasResult()) {
          lastTool = toolLine({ name: 'result', args: '' });
          tools.append(lastTool.line);
        }
        lastTool.setResult(e.content);
      } else if (e.type === 'approval_request') {
        const a = approvalCard(e, onApprove, approvalTimeoutSeconds);
        cards.push(a);
        approvals.append(a.card);
      } else if (e.type === 'file') files.append(fileLine(e));
      else if (e.type === 'error') error.textContent = e.message;
      else if (e.type === 'done') done = e;
      else if (e.type === 'completion') finish(e);
    },
    /** A typed `/allow`, `/deny` or `/allow always` answered request `id`; true when it is one of this turn's. */
    answered(id, decision, text) {
      const card = cards.find((c) => c.id === id);
      card?.answered(decision, text);
      return card !== undefined;
    },
    /** A turn this page has no stream of ended: its stored reply, as the history gives it (undefined: none was stored). */
    ended(stored) {
      text = stored?.text ?? '';
      paint();
      setState(stored?.status ?? 'stored');
      if (stored === undefined) error.textContent = 'It ended without a stored reply (stopped before any text, failed or silent).';
      else sayUnfinished(error, stored);
      const status = stored?.status ?? 'ended';
      meta.replaceChildren(el('span', { class: `status-${status}`, text: status }), when(Date.now()));
    },
    /** The stream ended without a completion (`lost`: the gateway went away), or the request was refused (`failed`). */
    lost(message, state = 'lost') {
      paint();
      for (const card of cards) card.close();
      setState(state);
      error.textContent = message;
    },
  };
}
