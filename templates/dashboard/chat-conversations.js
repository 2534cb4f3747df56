// The conversations of this browser: the session keys it started (kept in localStorage, each with
// the name shown for it) and their last activity from GET /api/sessions. Over HTTP a session is
// its key, which has no name on the gateway: renaming changes the name kept in this browser.
// Deleting resets the key on the gateway (POST /reset: its engine session and history) and
// forgets it here. Keys this browser did not start (the quick test's, a script's, a channel's)
// are listed apart and can be opened, which adds them to the list.
import { api, el, formatTime } from './api.js';

const LIST = 'service-chat-conversations';
const CURRENT = 'service-chat-current';
const NAME_LENGTH = 60;
const OTHERS_SHOWN = 50;

function read() {
  try {
    const value = JSON.parse(localStorage.getItem(LIST) ?? '[]');
    return Array.isArray(value) ? value.filter((c) => c && typeof c.key === 'string' && c.key.length > 0) : [];
  } catch {
    return [];
  }
}

/** `web-` and 12 hex digits (getRandomValues: randomUUID needs https, and the gateway may be plain http on a LAN). */
export function newKey() {
  return `web-${Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** A conversation's name from its first message: the first line, shortened. */
export function nameFrom(message) {
  const line = String(message).trim().split('\n')[0].trim();
  return line.length > NAME_LENGTH ? `${line.slice(0, NAME_LENGTH - 1)}…` : line;
}

export function createConversations({ list, others, othersCount, onOpen, onChange }) {
  let items = read();
  let current = localStorage.getItem(CURRENT);
  let server = new Map();
  const save = () => localStorage.setItem(LIST, JSON.stringify(items));
  const find = (key) => items.find((c) => c.key === key);
  const lastActivity = (c) => Date.parse(server.get(c.key)?.lastActivity ?? '') || c.createdAt;
  const titleOf = (c) => c?.name || (c?.key.startsWith('web-') ? 'New conversation' : c?.key) || '';

  const describe = (c) => {
    const s = server.get(c.key);
    if (!s) return 'new';
    return `${formatTime(s.lastActivity)}${s.turns ? ` · ${s.turns} turn${s.turns === 1 ? '' : 's'}` : ''}`;
  };

  const renameForm = (c, row) => {
    const input = el('input', { attrs: { value: c.name || '', 'aria-label': 'Conversation name', maxlength: NAME_LENGTH, placeholder: titleOf(c) } });
    const save = (e) => {
      e.preventDefault();
      api_.rename(c.key, input.value);
    };
    const form = el('form', { class: 'rename', on: { submit: save } }, [
      input,
      el('button', { text: 'Save', attrs: { type: 'submit' } }),
      el('button', { class: 'secondary', text: 'Cancel', attrs: { type: 'button' }, on: { click: () => render() } }),
    ]);
    input.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape') return;
      e.stopPropagation(); // cancels the rename only, not the phone's list sheet too
      render();
    });
    row.replaceChildren(form);
    input.focus();
    input.select();
  };

  const deleteButton = (c) => {
    let armed;
    const disarm = () => {
      armed = undefined;
      button.textContent = 'Delete';
    };
    const button = el('button', {
      class: 'secondary danger',
      text: 'Delete',
      attrs: { type: 'button', 'data-action': 'delete', title: 'Forget this conversation here and on the gateway' },
      on: {
        click: async () => {
          // Two clicks: the first asks, the second (within 4 s) deletes.
          if (!armed) {
            button.textContent = 'Delete?';
            armed = setTimeout(disarm, 4_000);
            return;
          }
          clearTimeout(armed);
          button.disabled = true;
          try {
            await api_.remove(c.key);
          } catch (err) {
            disarm();
            button.disabled = false;
            button.title = `Delete failed: ${err.message}`;
            button.textContent = 'Delete failed';
          }
        },
      },
    });
    return button;
  };

  const row = (c) => {
    const li = el('li', { attrs: { 'data-key': c.key, ...(c.key === current ? { 'aria-current': 'true' } : {}) } });
    li.append(
      el('button', { class: 'open', attrs: { type: 'button', title: c.key }, on: { click: () => onOpen(c.key) } }, [
        el('span', { class: 'name', text: titleOf(c) }),
        el('span', { class: 'when muted', text: describe(c) }),
      ]),
      el('span', { class: 'row-actions' }, [
        el('button', { class: 'secondary', text: 'Rename', attrs: { type: 'button', 'data-action': 'rename' }, on: { click: () => renameForm(c, li) } }),
        deleteButton(c),
      ]),
    );
    return li;
  };

  const openOther = (key) => {
    api_.adopt(key);
    onOpen(key);
  };
  const render = () => {
    const sorted = [...items].sort((a, b) => lastActivity(b) - lastActivity(a));
    list.replaceChildren(...sorted.map(row));
    const mine = new Set(items.map((c) => c.key));
    const rest = [...server.values()].filter((s) => !mine.has(s.key));
    othersCount.textContent = String(rest.length);
    others.replaceChildren(
      ...rest
        .slice(0, OTHERS_SHOWN)
        .map((s) =>
          el('li', { attrs: { 'data-key': s.key } }, [
            el('span', { class: 'name', text: s.name ? `${s.key} (${s.name})` : s.key }),
            el('span', { class: 'when muted', text: formatTime(s.lastActivity) }),
            el('button', { class: 'secondary', text: 'Open', attrs: { type: 'button' }, on: { click: () => openOther(s.key) } }),
          ]),
        ),
    );
  };

  const api_ = {
    /** The conversation open last in this browser, else the newest; undefined when there is none. */
    get current() {
      return current && find(current) ? current : [...items].sort((a, b) => lastActivity(b) - lastActivity(a))[0]?.key;
    },
    titleOf: (key) => titleOf(find(key) ?? { key }),
    describe: (key) => (find(key) ? describe(find(key)) : ''),
    /** A new, empty conversation, made current. */
    create() {
      const c = { key: newKey(), name: '', createdAt: Date.now() };
      items.unshift(c);
      save();
      api_.select(c.key);
      return c.key;
    },
    select(key) {
      current = key;
      localStorage.setItem(CURRENT, key);
      render();
    },
    /** A key started elsewhere, added to this browser's list. */
    adopt(key) {
      if (find(key)) return;
      items.unshift({ key, name: '', createdAt: Date.now() });
      save();
    },
    /** The first message names a conversation that has no name yet. */
    nameIfNew(key, message) {
      const c = find(key);
      if (!c || c.name || !message.trim()) return;
      c.name = nameFrom(message);
      save();
      render();
      onChange(key);
    },
    rename(key, name) {
      const c = find(key);
      if (c) c.name = name.trim().slice(0, NAME_LENGTH);
      save();
      render();
      onChange(key);
    },
    /** POST /reset, then forget it here; the current one is replaced by the newest left (or a new one). */
    async remove(key) {
      await api('/reset', { method: 'POST', json: { sessionKey: key } });
      items = items.filter((c) => c.key !== key);
      server.delete(key);
      save();
      if (key === current) {
        const next = [...items].sort((a, b) => lastActivity(b) - lastActivity(a))[0]?.key ?? api_.create();
        onOpen(next);
      } else render();
    },
    /** Last activity and turns of every key from the gateway. */
    async refresh() {
      const { sessions } = await api('/api/sessions?limit=1000');
      server = new Map(sessions.map((s) => [s.key, s]));
      render();
    },
    render,
  };
  return api_;
}
