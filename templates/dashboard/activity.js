// The live activity feed (GET /api/events through EventSource, token in the query because
// EventSource cannot send headers) and the escalation panel.
import { $, api, el, formatCost, formatDuration, formatTime, token } from './api.js';

const KEPT = 100;
const ESCALATE = '[ESCALATE]';

function activityItem(r, labelOf) {
  return el('li', { class: 'activity', attrs: { 'data-status': r.status } }, [
    el('div', { class: 'meta' }, [
      el('time', { text: formatTime(r.ts), attrs: { datetime: r.ts } }),
      el('span', { class: 'pill', text: labelOf(r.source) }),
      r.sender && r.sender !== r.source ? el('span', { class: 'muted', text: r.sender }) : null,
      el('span', { class: `pill status-${r.status}`, text: r.status }),
      el('span', { class: 'muted', text: `${formatDuration(r.durationMs)} · ${formatCost(r.costUsd)}` }),
    ]),
    el('p', { class: 'said', text: r.messagePreview }),
    el('p', { class: 'reply', text: r.responsePreview || r.error || '' }),
  ]);
}

export function isEscalation(r) {
  return (
    r.status === 'failed' ||
    r.status === 'aborted' ||
    r.escalated === true ||
    String(r.responsePreview ?? '')
      .trimStart()
      .startsWith(ESCALATE)
  );
}

/** Feed of processed messages, newest first; reconnects when the stream drops. */
export function createActivityFeed({ onRecord, labelOf }) {
  const list = $('activity');
  const state = $('activity-state');
  let source;
  let retry;

  const setState = (text, cls) => {
    state.textContent = text;
    state.className = `pill ${cls}`;
  };
  const add = (r) => {
    list.querySelector('.empty')?.remove();
    list.prepend(activityItem(r, labelOf));
    while (list.children.length > KEPT) list.lastElementChild.remove();
  };

  return {
    fill(records) {
      if (records.length === 0) return list.replaceChildren(el('li', { class: 'empty', text: 'nothing yet: messages appear here as they are processed' }));
      list.replaceChildren(...records.slice(0, KEPT).map((r) => activityItem(r, labelOf)));
    },
    connect() {
      this.close();
      source = new EventSource(`/api/events?token=${encodeURIComponent(token.get() ?? '')}`);
      source.onopen = () => setState('live', 'ok');
      source.onmessage = (e) => {
        let r;
        try {
          r = JSON.parse(e.data);
        } catch {
          return;
        }
        add(r);
        onRecord(r);
      };
      source.onerror = () => {
        // EventSource retries by itself unless the server refused it (then it is CLOSED).
        if (source.readyState === EventSource.CLOSED) {
          setState('disconnected', 'bad');
          retry = setTimeout(() => this.connect(), 5_000);
        } else setState('reconnecting…', '');
      };
    },
    close() {
      clearTimeout(retry);
      source?.close();
      source = undefined;
    },
  };
}

export async function loadEscalations(labelOf) {
  const { escalations } = await api('/api/escalations?limit=50');
  const list = $('escalations');
  $('escalations-count').textContent = String(escalations.length);
  if (escalations.length === 0) return list.replaceChildren(el('li', { class: 'empty', text: 'no failed, aborted or escalated turns' }));
  list.replaceChildren(
    ...escalations.map((r) =>
      el('li', { class: 'activity', attrs: { 'data-status': r.kind } }, [
        el('div', { class: 'meta' }, [
          el('span', { class: `pill kind-${r.kind}`, text: r.kind }),
          el('time', { text: formatTime(r.ts), attrs: { datetime: r.ts } }),
          el('span', { class: 'pill', text: labelOf(r.source) }),
          el('span', { class: 'muted', text: `chat ${r.sessionKey}` }),
        ]),
        el('p', { class: 'said', text: r.messagePreview }),
        el('p', { class: 'reply', text: r.kind === 'escalated' ? r.responsePreview : r.error || r.responsePreview || '' }),
      ]),
    ),
  );
}
