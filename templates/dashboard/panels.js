// The small panels: bot status (public), channels, skills and the fleet.
import { $, api, el, formatTime, formatUptime, renderPairs, safeHref } from './api.js';

/** GET /health needs no token: name, engine, model, version and uptime are not secrets. */
export async function showPublicStatus() {
  const res = await fetch('/health', { cache: 'no-store' });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const h = await res.json();
  $('bot-name').textContent = h.name;
  document.title = `${h.name} · service`;
  $('f-name').textContent = h.name;
  $('f-engine').textContent = h.engine;
  $('f-model').textContent = h.model || '(engine default)';
  $('f-uptime').textContent = formatUptime(h.uptime);
  $('f-version').textContent = h.version;
  return h;
}

export function renderStatusExtras(status) {
  $('f-turns').textContent = status.turns ? `${status.turns.running} running, ${status.turns.waiting} waiting` : '–';
  // Replies a platform refused, kept in the outbox and sent again (docs/channels.md).
  const r = status.replies;
  $('f-replies').textContent = !r ? '–' : r.waiting === 0 ? 'none' : `${r.waiting}, the oldest since ${formatTime(r.oldest)}`;
  // Empty when the engine can start (.error:empty is not shown).
  $('engine-warning').textContent = status.engineWarning ? `Turns cannot start: ${status.engineWarning}` : '';
  renderWarm(status.warm);
  // The commands the page names, as this CLI is typed here (`agent-service` where `service` is the system's).
  if (status.cli) for (const code of document.querySelectorAll('code[data-cli]')) code.textContent = `${status.cli} ${code.dataset.cli}`;
}

/** `warm:` as configured, and each engine process kept between turns with its memory. */
function renderWarm(warm) {
  if (!warm) return;
  $('f-warm').textContent = warm.enabled
    ? `${warm.processes.length} of ${warm.maxProcesses} running, ended after ${warm.idleSeconds} s idle`
    : 'off (every turn starts the engine)';
  $('warm-processes').replaceChildren(
    ...warm.processes.map((p) =>
      el('li', { attrs: { 'data-pid': String(p.pid) } }, [
        el('code', { text: `pid ${p.pid}` }),
        el('span', { text: ` ${p.engine} · ${p.sessionKey} · ${p.turns} turn(s) · ${Math.round(p.rssBytes / 1048576)} MiB` }),
        el('span', { class: `pill ${p.busy ? 'status-connected' : ''}`, text: p.busy ? 'in a turn' : 'idle' }),
      ]),
    ),
  );
}

/** Each channel as its config key beside the platform's name (`channel_d · Slack`), with its state. */
export function renderChannels(channels) {
  const list = $('channels');
  if (channels.length === 0) return list.replaceChildren(el('li', { class: 'empty', text: 'no channels' }));
  list.replaceChildren(
    ...channels.map((c) =>
      el('li', { attrs: { 'data-channel': c.type } }, [
        el('span', { class: 'channel' }, [el('code', { text: c.type }), c.title ? el('span', { text: ` · ${c.title}` }) : null]),
        el('span', { class: `pill status-${c.status}`, text: c.status.replace('_', ' ') }),
        c.reason ? el('small', { class: 'reason', text: c.reason }) : null,
      ]),
    ),
  );
}

export function renderSkills(skills) {
  $('skills-count').textContent = String(skills.length);
  if (skills.length === 0) return $('skills').replaceChildren(el('li', { class: 'empty', text: 'no skills in skills/' }));
  $('skills').replaceChildren(
    ...skills.map((s) => el('li', { class: 'stack' }, [el('strong', { text: s.name }), el('span', { class: 'muted', text: s.description })])),
  );
}

export async function loadFleet() {
  const { peers } = await api('/api/fleet');
  const list = $('fleet');
  if (peers.length === 0) return renderPairs(list, [], 'no gateways registered');
  list.replaceChildren(
    ...peers.map((p) => {
      const href = safeHref(p.dashboardUrl);
      const name = href && !p.self ? el('a', { text: p.name, attrs: { href, target: '_blank', rel: 'noopener noreferrer' } }) : el('strong', { text: p.name });
      const health = p.self
        ? el('span', { class: 'pill', text: 'this gateway' })
        : el('span', { class: `pill ${p.healthy ? 'ok' : 'bad'}`, text: p.healthy ? 'answering' : 'not answering', attrs: { title: p.healthError } });
      return el('li', { class: 'stack', attrs: { 'data-peer': p.name } }, [
        el('div', { class: 'row' }, [name, health]),
        el('span', { class: 'muted', text: [p.role, p.engine, p.hostname && `on ${p.hostname}`, p.url].filter(Boolean).join(' · ') }),
      ]);
    }),
  );
}
