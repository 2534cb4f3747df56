// Scheduled tasks (GET /api/tasks and its routes): each task with its schedule, next run and last
// status; run one now and watch its reply stream in; enable or disable it (written to
// service.yaml); its recent runs. Cards are drawn from state kept here, so a refresh of the
// list never loses a run that is streaming or a history that is open.
import { $, api, el, formatCost, formatDuration, formatTime, readSseData, token } from './api.js';

const HISTORY_LIMIT = 10;
const RUNNING = 'running…';
const path = (id, tail) => `/api/tasks/${encodeURIComponent(id)}/${tail}`;

export function createTasksPanel() {
  const list = $('tasks');
  const tasks = new Map(); // id → the API's summary
  const runs = new Map(); // id → { text, status, error } of a run started from this page
  const histories = new Map(); // id → runs, for the tasks whose history is open

  const cardOf = (id) => [...list.children].find((li) => li.dataset.task === id);
  const redraw = (id) => {
    const t = tasks.get(id);
    const old = cardOf(id);
    if (t && old) old.replaceWith(card(t));
  };

  const render = () => {
    $('tasks-count').textContent = String(tasks.size);
    if (tasks.size === 0) return list.replaceChildren(el('li', { class: 'empty', text: 'no tasks: add them under tasks: in service.yaml' }));
    list.replaceChildren(...[...tasks.values()].map(card));
  };

  const load = async () => {
    const body = await api('/api/tasks');
    $('tasks-unscheduled').hidden = body.scheduled;
    tasks.clear();
    for (const t of body.tasks) tasks.set(t.id, t);
    for (const id of [...histories.keys()]) if (!tasks.has(id)) histories.delete(id);
    render();
  };

  const loadHistory = async (id) => {
    const body = await api(`${path(id, 'history')}?limit=${HISTORY_LIMIT}`);
    histories.set(id, body.runs);
    redraw(id);
  };

  const runNow = async (id) => {
    const run = { text: '', status: RUNNING, error: '' };
    runs.set(id, run);
    redraw(id);
    try {
      const res = await fetch(path(id, 'run'), { method: 'POST', headers: { authorization: `Bearer ${token.get() ?? ''}` } });
      if (!res.ok) throw new Error((await res.json().catch(() => ({}))).error ?? `HTTP ${res.status}`);
      for await (const data of readSseData(res.body)) {
        let e;
        try {
          e = JSON.parse(data);
        } catch {
          continue;
        }
        if (e.type === 'text') run.text += e.content;
        else if (e.type === 'error') run.error = e.message;
        else if (e.type === 'completion') run.status = e.status;
        redraw(id);
      }
    } catch (err) {
      run.error = err.message;
      run.status = 'failed';
    }
    await load();
    if (histories.has(id)) await loadHistory(id);
  };

  const toggle = async (id) => {
    const t = tasks.get(id);
    const body = await api(path(id, t.enabled ? 'disable' : 'enable'), { method: 'POST' });
    tasks.set(id, body.task);
    redraw(id);
  };

  const act = (id, what) => () => {
    const done = what().catch((err) => {
      const c = cardOf(id);
      if (c) c.querySelector('.task-error').textContent = err.message;
    });
    return done;
  };

  function card(t) {
    const run = runs.get(t.id);
    const history = histories.get(t.id);
    const going = t.running || run?.status === RUNNING;
    return el('li', { class: 'task', attrs: { 'data-task': t.id, 'data-enabled': String(t.enabled) } }, [
      el('div', { class: 'row' }, [
        el('strong', { text: t.name }),
        el('code', { text: t.id }),
        el('span', { class: `pill ${t.enabled ? 'ok' : ''}`, text: t.enabled ? 'enabled' : 'disabled' }),
        going ? el('span', { class: 'pill warn', text: 'running' }) : null,
      ]),
      el('p', { class: 'muted small task-when' }, [
        // A one-shot task (/remind, POST /api/tasks with `at`) runs once, then removes itself.
        t.schedule ? el('code', { text: t.schedule }) : el('span', { text: `once, ${formatTime(t.at)}` }),
        el('span', { text: t.nextRun ? ` · next ${formatTime(t.nextRun)}` : ' · not scheduled (disabled)' }),
        t.target ? el('span', { text: ` · sends to ${t.target.channel} ${t.target.chatId}` }) : null,
      ]),
      lastRun(t.lastRun),
      el('div', { class: 'actions' }, [
        el('button', {
          text: 'Run now',
          attrs: { type: 'button', 'data-action': 'run', disabled: going ? '' : undefined },
          on: { click: act(t.id, () => runNow(t.id)) },
        }),
        el('button', {
          class: 'secondary',
          text: t.enabled ? 'Disable' : 'Enable',
          attrs: { type: 'button', 'data-action': 'toggle' },
          on: { click: act(t.id, () => toggle(t.id)) },
        }),
        el('button', {
          class: 'secondary',
          text: history ? 'Hide history' : 'History',
          attrs: { type: 'button', 'data-action': 'history', 'aria-expanded': String(Boolean(history)) },
          on: {
            click: act(t.id, async () => {
              if (histories.delete(t.id)) return redraw(t.id);
              await loadHistory(t.id);
            }),
          },
        }),
      ]),
      run
        ? el('div', { class: 'task-run' }, [
            el('div', { class: 'row' }, [
              el('span', { text: 'Run started here' }),
              el('span', { class: `pill run-status status-${run.status === RUNNING ? 'running' : run.status}`, text: run.status }),
            ]),
            el('pre', { class: 'output', text: run.text, attrs: { 'aria-live': 'polite' } }),
            el('p', { class: 'error', text: run.error }),
          ])
        : null,
      history ? historyList(history) : null,
      el('p', { class: 'error task-error' }),
    ]);
  }

  return { load };
}

// --- internal ---

function lastRun(r) {
  if (!r) return el('p', { class: 'muted small task-last', text: 'never run' });
  return el('div', { class: 'task-last' }, [
    el('div', { class: 'row small' }, [
      el('span', { class: 'muted', text: 'Last run' }),
      el('span', { class: `pill status-${r.status}`, text: r.status }),
      el('time', { class: 'muted', text: formatTime(r.startedAt), attrs: { datetime: r.startedAt } }),
      el('span', { class: 'muted', text: `${formatDuration(r.durationMs)} · ${formatCost(r.costUsd)}` }),
      deliveredPill(r),
    ]),
    r.preview || r.error ? el('p', { class: `small ${r.error ? 'error' : ''}`, text: r.error || r.preview }) : null,
  ]);
}

function deliveredPill(r) {
  if (r.delivered === undefined) return null;
  return el('span', { class: `pill ${r.delivered ? 'ok' : 'bad'}`, text: r.delivered ? 'delivered' : 'not delivered' });
}

function historyList(runs) {
  if (runs.length === 0) return el('ul', { class: 'list task-history' }, [el('li', { class: 'empty', text: 'no runs yet' })]);
  return el(
    'ul',
    { class: 'list task-history' },
    runs.map((r) =>
      el('li', { class: 'stack', attrs: { 'data-status': r.status } }, [
        el('div', { class: 'row small' }, [
          el('time', { text: formatTime(r.startedAt), attrs: { datetime: r.startedAt } }),
          el('span', { class: `pill status-${r.status}`, text: r.status }),
          el('span', { class: 'muted', text: formatDuration(r.durationMs) }),
          deliveredPill(r),
        ]),
        r.preview || r.error ? el('span', { class: `small ${r.error ? 'error' : 'muted'}`, text: r.error || r.preview }) : null,
      ]),
    ),
  );
}
