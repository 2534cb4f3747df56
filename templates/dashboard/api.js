// Helpers shared by the dashboard's modules. Everything user-controlled reaches the page through
// textContent: el() has no way to set HTML, so a message holding markup stays visible text.
const KEY = 'service-token';

export const $ = (id) => document.getElementById(id);

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
  // The link `service gateway` prints carries the token in the fragment, which browsers never
  // send to the server; it is moved to sessionStorage and removed from the address bar at once.
  takeFromFragment() {
    const m = /(?:^|&)token=([^&]+)/.exec(location.hash.slice(1));
    if (!m) return false;
    this.set(decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search);
    return true;
  },
};

export class ApiError extends Error {
  constructor(message, status, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

/** fetch with the bearer token; JSON in (`json`), JSON out; non-2xx throws ApiError with the server's message. */
export async function api(path, init = {}) {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  headers.set('authorization', `Bearer ${token.get() ?? ''}`);
  if (json !== undefined) headers.set('content-type', 'application/json');
  const res = await fetch(path, { ...rest, headers, ...(json !== undefined ? { body: JSON.stringify(json) } : {}) });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(body.error ?? `HTTP ${res.status}`, res.status, body);
  return body;
}

/**
 * The `data:` payloads of an SSE body as they arrive (POST streams: EventSource cannot POST).
 * Lines starting with `:` are comments (heartbeats) and are skipped, as the SSE format says.
 */
export async function* readSseData(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      if (data) yield data;
    }
  }
}

/** Build an element: `text` becomes textContent, `attrs` plain attributes, `on` listeners. */
export function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.text !== undefined && props.text !== null) node.textContent = String(props.text);
  for (const [k, v] of Object.entries(props.attrs ?? {})) if (v !== undefined && v !== null) node.setAttribute(k, String(v));
  for (const [event, fn] of Object.entries(props.on ?? {})) node.addEventListener(event, fn);
  node.append(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

/** Source names for the feed and the counters: `channel_d · Slack` for a channel the status named, else the key (http, cron). */
export function createSourceLabels() {
  const titles = new Map();
  return {
    learn(channels) {
      for (const c of channels ?? []) if (c.title) titles.set(c.type, c.title);
    },
    of: (source) => (titles.has(source) ? `${source} · ${titles.get(source)}` : source),
  };
}

/** Put text on the clipboard; false without clipboard access (plain http on a LAN address): the caller lets the user select it. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** Only http(s) links: a peer's URL comes from a file on disk and must not become `javascript:`. */
export const safeHref = (url) => (typeof url === 'string' && /^https?:\/\//i.test(url) ? url : undefined);

export function formatUptime(ms) {
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400),
    h = Math.floor((s % 86400) / 3600),
    m = Math.floor((s % 3600) / 60);
  return d ? `${d}d ${h}h` : h ? `${h}h ${m}m` : `${m}m ${s % 60}s`;
}

export const formatCost = (usd) => `$${(Number(usd) || 0).toFixed(4)}`;
export const formatDuration = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms || 0)} ms`);

export function formatTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

/** Replace a list's rows with `[label, value, valueClass]` pairs. */
export function renderPairs(list, rows, empty = 'none') {
  if (rows.length === 0) return list.replaceChildren(el('li', { class: 'empty', text: empty }));
  list.replaceChildren(...rows.map(([left, right, cls]) => el('li', {}, [el('span', { text: left }), el('span', { class: cls, text: right })])));
}
