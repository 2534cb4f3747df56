// The Chat view: this browser's conversations beside the open one, and the box to write in. Each
// conversation is a session key; its earlier messages come from the gateway's store (GET
// /api/sessions/:key/history) the first time it is opened in this page, so a reload shows them
// again. A message sent while a turn of the conversation runs is queued by the API and shown as
// queued here until the turn before it ends. Stop is POST /abort. A message starting with `/` is
// a slash command, answered as a system line; one the service does not know can be sent on as
// the engine's own command (POST /command).
import { $, api, el } from './api.js';
import { attachmentFields, createComposer } from './chat-composer.js';
import { createConversations } from './chat-conversations.js';
import { assistantTurn, storedReply, systemLine, userMessage } from './chat-messages.js';
import { abortTurn, answerApproval, commandBody, postTurn } from './chat-stream.js';

const HISTORY = 200;
/** How often a turn that started before the page was loaded is looked at, until it ends. */
const FOLLOW_MS = 2000;
/** How close to the end the transcript counts as "at the end", so new text keeps it there. */
const PINNED_PX = 48;
const LOST = 'The connection to the gateway was lost before the turn ended. The turn goes on there; its reply is stored when it ends (reload to see it).';

export function createChatView() {
  const panel = $('chat');
  const pane = $('chat-transcript');
  const threads = new Map();
  let key;
  let pinned = true;
  let started = false;
  /** approvalTimeoutSeconds from service.yaml (its default unless set), for the approval cards' wording. */
  let approvalTimeoutSeconds = 300;

  const conversations = createConversations({
    list: $('chat-list'),
    others: $('chat-others'),
    othersCount: $('chat-others-count'),
    onOpen: (k) => void show(k),
    onChange: () => showTitle(),
  });
  const composer = createComposer({
    form: $('chat-form'),
    input: $('chat-input'),
    picker: $('chat-files'),
    attach: $('chat-attach'),
    chips: $('chat-attachments'),
    note: $('chat-note'),
    stop: $('chat-stop'),
    onSend: (text, attached) => void send(text, attached),
    onStop: () => void stop(),
  });

  // New content keeps the transcript at its end, unless the person scrolled up to read.
  pane.addEventListener('scroll', () => {
    pinned = pane.scrollHeight - pane.scrollTop - pane.clientHeight < PINNED_PX;
  });
  const follow = new ResizeObserver(() => {
    if (pinned) pane.scrollTop = pane.scrollHeight;
  });

  const thread = (k) => {
    let t = threads.get(k);
    if (!t) {
      // turns: running or queued; streamed: every turn this page streamed (a typed /allow may arrive after its turn ended).
      t = { list: el('ol', { class: 'messages', attrs: { role: 'log', 'aria-label': 'Messages' } }), turns: [], streamed: [], loaded: undefined };
      follow.observe(t.list);
      threads.set(k, t);
    }
    return t;
  };

  const load = async (k, t) => {
    try {
      const { messages, more, running } = await api(history(k));
      const nodes = messages.map((m) => (m.role === 'user' ? userMessage(m.text, { ts: m.ts }) : storedReply(m)));
      if (more) nodes.unshift(systemLine(`Older messages are not shown here (the newest ${HISTORY} are).`));
      t.list.prepend(...nodes);
      if (running)
        void followEarlier(
          k,
          t,
          messages.findLast((m) => m.role === 'user'),
        );
    } catch (err) {
      t.loaded = undefined; // tried again when the conversation is next opened
      t.list.prepend(systemLine(`The earlier messages could not be loaded: ${err.message}`, 'failed'));
    }
  };

  /**
   * A turn that was running when the history was read (the page was reloaded, or opened elsewhere,
   * mid-turn): its stream is another page's, so it is shown running, Stop reaches it, and when it
   * ends (or a turn sent from here starts after it) its stored reply is shown in its place.
   */
  async function followEarlier(k, t, prompt) {
    t.list.append(
      systemLine(
        'A turn of this conversation was running on the gateway when this page was loaded: its reply shows below once it ends. Stop ends it; an approval it asks for is answered with /allow or /deny.',
      ),
    );
    const turn = assistantTurn({ state: 'running', onApprove: (id, decision) => answerApproval(k, id, decision), approvalTimeoutSeconds });
    t.list.append(turn.node);
    t.turns.push(turn);
    if (k === key) syncRunning();
    let stored;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS));
      try {
        const h = await api(history(k));
        if (h.running && !t.turns.some((x) => x !== turn && x.state !== 'queued')) continue;
        const at = prompt ? h.messages.findIndex((m) => m.role === 'user' && m.ts === prompt.ts && m.text === prompt.text) : -1;
        stored = at >= 0 && h.messages[at + 1]?.role === 'assistant' ? h.messages[at + 1] : undefined;
        break;
      } catch {
        // The gateway did not answer (restarting): looked at again.
      }
    }
    t.turns = t.turns.filter((x) => x !== turn);
    turn.ended(stored);
    if (k === key) syncRunning();
    void conversations.refresh().catch(() => {});
  }

  const history = (k) => `/api/sessions/${encodeURIComponent(k)}/history?limit=${HISTORY}`;

  const showTitle = () => {
    $('chat-title').textContent = conversations.titleOf(key);
    $('chat-key').textContent = `session ${key}`;
  };
  const syncRunning = () => composer.setRunning((threads.get(key)?.turns.length ?? 0) > 0);

  const setListOpen = (open) => {
    panel.dataset.list = open ? 'open' : 'closed';
    $('chat-list-toggle').setAttribute('aria-expanded', String(open));
  };

  async function show(k) {
    key = k;
    conversations.select(k);
    const t = thread(k);
    pane.replaceChildren(t.list);
    pinned = true;
    showTitle();
    syncRunning();
    setListOpen(false);
    t.loaded ??= load(k, t);
    await t.loaded;
    pane.scrollTop = pane.scrollHeight;
  }

  /** One streamed turn (POST /chat, or POST /command for an engine's command) into the thread. */
  async function runTurn(k, t, path, body) {
    const turn = assistantTurn({
      state: t.turns.length > 0 ? 'queued' : 'running',
      onApprove: (id, decision) => answerApproval(k, id, decision),
      approvalTimeoutSeconds,
    });
    t.list.append(turn.node);
    t.turns.push(turn);
    t.streamed.push(turn);
    if (k === key) syncRunning();
    try {
      const r = await postTurn(path, body, (e) => turn.event(e));
      if (!r.ended) turn.lost(LOST);
    } catch (err) {
      // Refused before any turn (a 400 for a body the API does not take, a 401): nothing runs.
      turn.lost(err.message, 'failed');
    } finally {
      t.turns = t.turns.filter((x) => x !== turn);
      // The API runs a key's turns in order: the next one starts now.
      if (t.turns[0]?.state === 'queued') t.turns[0].setState('running');
      if (k === key) syncRunning();
      void conversations.refresh().catch(() => {});
    }
  }

  /** A slash command: its answer is one JSON object, shown as a system line. */
  async function command(k, t, text, attached) {
    const typed = userMessage(text, { ts: Date.now() });
    t.list.append(typed);
    if (attached.length) t.list.append(systemLine('A slash command takes no attachments: they were not sent.'));
    let answer;
    try {
      answer = (await postTurn('/chat', { message: text, sessionKey: k }, () => {})).command ?? {};
    } catch (err) {
      answer = { text: err.message, error: 'request_failed' };
    }
    const line = systemLine(answer.text ?? JSON.stringify(answer), answer.error ? 'failed' : '');
    // /reset forgot the conversation (the store's history too): the page forgets what it showed of it,
    // as a reload would, but keeps the turns still running or queued.
    if (!answer.error && /^\/reset\s*$/.test(text.trim())) {
      t.list.replaceChildren(...t.turns.map((x) => x.node), typed);
      t.streamed = [...t.turns];
      void conversations.refresh().catch(() => {});
    }
    // A typed /allow, /deny or /allow always answered a request: its card says so, also when the turn
    // it let go on has ended before this answer came back.
    if (answer.approval && answer.decision) for (const turn of t.streamed) turn.answered(answer.approval, answer.decision, answer.text);
    if (answer.error === 'unknown_command') {
      const body = commandBody(text, k);
      const button = el('button', {
        class: 'secondary',
        text: `Send /${body.command} to the engine as its own command`,
        attrs: { type: 'button', 'data-action': 'engine-command' },
        on: {
          click: () => {
            button.disabled = true;
            void runTurn(k, t, '/command', body);
          },
        },
      });
      line.append(button);
    }
    t.list.append(line);
  }

  async function send(text, attached) {
    const k = key;
    if (!k) return;
    const t = thread(k);
    // A message sent while the history loads goes after it, never before or twice.
    await t.loaded;
    pinned = true;
    if (text.startsWith('/')) return command(k, t, text, attached);
    t.list.append(userMessage(text, { attachments: attached, ts: Date.now() }));
    conversations.nameIfNew(k, text.trim() || attached[0]?.name || '');
    await runTurn(k, t, '/chat', { message: text, sessionKey: k, ...attachmentFields(attached) });
  }

  async function stop() {
    const t = thread(key);
    try {
      if (!(await abortTurn(key))) t.list.append(systemLine('Nothing is running in this conversation now.'));
    } catch (err) {
      t.list.append(systemLine(`Stop failed: ${err.message}`, 'failed'));
    }
  }

  $('chat-new').addEventListener('click', () => void show(conversations.create()).then(() => composer.focus()));
  $('chat-list-toggle').addEventListener('click', () => setListOpen(panel.dataset.list !== 'open'));
  $('chat-list-close').addEventListener('click', () => setListOpen(false));
  $('chat-side').addEventListener('keydown', (e) => e.key === 'Escape' && setListOpen(false));

  // On a phone the on-screen keyboard shrinks the visual viewport; the chat is sized to it so the
  // box stays above the keyboard (browsers with interactive-widget=resizes-content do this alone).
  // A pinch zoom shrinks it too, and is left alone.
  const viewport = window.visualViewport;
  const fitViewport = () => {
    if (viewport.scale <= 1.01) document.documentElement.style.setProperty('--chat-height', `${Math.round(Math.min(viewport.height, innerHeight))}px`);
  };
  viewport?.addEventListener('resize', fitViewport);
  if (viewport) fitViewport();

  return {
    /** The view is shown (also after the token was given): the list is refreshed; the first time, a conversation opens. */
    async enter() {
      const listed = conversations.refresh().catch((err) => console.warn(`sessions: ${err.message}`));
      void api('/api/config')
        .then(({ config }) => {
          const seconds = Number(config?.approvalTimeoutSeconds ?? 300);
          if (Number.isFinite(seconds) && seconds >= 0) approvalTimeoutSeconds = seconds;
        })
        .catch((err) => console.warn(`config: ${err.message}`));
      if (started) return listed;
      started = true;
      await show(conversations.current ?? conversations.create());
      await listed;
    },
  };
}
