// The Access view: pairing codes waiting for approval (approve / deny), who may use the assistant
// from the channels (revoke what was approved), admins and limits, today's spending against the
// daily budget, and the messages refused by access control or the budget (beside the escalations).
import { $, api, el, formatCost, formatTime } from './api.js';

const POLICY = { pairing: 'pairing codes', allowlist: 'allowlist only', open: 'open to everyone' };

function formatAge(seconds) {
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min`;
}

/** A cap as the owner wrote it: $5.00, $0.50, $0.0125. */
const formatCap = (usd) => (Math.abs(Number(usd.toFixed(2)) - usd) < 1e-9 ? `$${usd.toFixed(2)}` : formatCost(usd));

/** "$0.0123 today of a $5.00 cap" or "$0.0123 today, no daily cap": the Cost tile and the Access view. */
export function formatBudget(b) {
  if (!b) return '';
  const today = `${formatCost(b.todayCostUsd)} today`;
  if (!(b.dailyBudgetUsd > 0)) return `${today}, no daily cap`;
  return `${today} of a ${formatCap(b.dailyBudgetUsd)} cap${b.reached ? ': reached' : ''}`;
}

export function renderBudget(budget) {
  const node = $('m-today');
  node.textContent = formatBudget(budget);
  node.classList.toggle('bad', Boolean(budget?.reached));
}

function refusalItem(r, labelOf) {
  return el('li', { class: 'activity', attrs: { 'data-status': 'refused', 'data-reason': r.refused } }, [
    el('div', { class: 'meta' }, [
      el('span', { class: 'pill kind-refused', text: (r.refused ?? 'refused').replace('_', ' ') }),
      el('time', { text: formatTime(r.ts), attrs: { datetime: r.ts } }),
      el('span', { class: 'pill', text: labelOf(r.source) }),
      r.sender && r.sender !== r.source ? el('span', { class: 'muted', text: r.sender }) : null,
    ]),
    el('p', { class: 'said', text: r.messagePreview }),
    el('p', { class: 'reply', text: r.error || r.responsePreview || '' }),
  ]);
}

export function createAccessPanel({ labelOf, onChange }) {
  const act = async (path, body, button) => {
    button.disabled = true;
    $('access-error').hidden = true;
    try {
      const res = await api(path, { method: 'POST', json: body });
      $('access-note').textContent = res.text ?? '';
      await load();
      onChange?.();
    } catch (err) {
      $('access-error').textContent = err.message;
      $('access-error').hidden = false;
      button.disabled = false;
    }
  };

  const renderPending = (pending) => {
    $('pairings-count').textContent = String(pending.length);
    if (pending.length === 0) return $('pairings').replaceChildren(el('li', { class: 'empty', text: 'no pairing codes are waiting' }));
    $('pairings').replaceChildren(
      ...pending.map((p) => {
        const approve = el('button', { text: 'Approve', attrs: { type: 'button', 'data-action': 'approve' } });
        const deny = el('button', { class: 'secondary', text: 'Deny', attrs: { type: 'button', 'data-action': 'deny' } });
        approve.addEventListener('click', () => void act('/api/access/approve', { code: p.code }, approve));
        deny.addEventListener('click', () => void act('/api/access/deny', { code: p.code }, deny));
        return el('li', { attrs: { 'data-code': p.code } }, [
          el('span', { class: 'stack-inline' }, [
            el('code', { class: 'code', text: p.code }),
            el('span', { text: ` ${p.kind === 'chat' ? 'group' : 'sender'} ` }),
            el('code', { text: p.subject }),
            p.label ? el('span', { class: 'muted', text: ` ${p.label}` }) : null,
            el('span', { class: 'muted', text: ` · ${formatAge(p.ageSeconds)} ago` }),
          ]),
          el('span', { class: 'actions' }, [approve, deny]),
        ]);
      }),
    );
  };

  const renderEntries = (list, entries, empty) => {
    if (entries.length === 0) return list.replaceChildren(el('li', { class: 'empty', text: empty }));
    list.replaceChildren(
      ...entries.map((e) => {
        const revoke =
          e.source === 'approved' ? el('button', { class: 'secondary', text: 'Revoke', attrs: { type: 'button', 'data-action': 'revoke' } }) : null;
        revoke?.addEventListener('click', () => void act('/api/access/revoke', { id: e.id }, revoke));
        const from = e.source === 'config' ? 'service.yaml' : `approved ${formatTime(e.approvedAt)} by ${e.approvedBy}`;
        return el('li', { attrs: { 'data-id': e.id } }, [
          el('span', {}, [
            el('code', { text: e.id }),
            e.label ? el('span', { text: ` ${e.label}` }) : null,
            el('span', { class: 'muted', text: ` · ${from}` }),
          ]),
          revoke,
        ]);
      }),
    );
  };

  async function load() {
    const a = await api('/api/access');
    renderPending(a.pending);
    $('access-policy').textContent = `Direct messages: ${POLICY[a.dm] ?? a.dm}. Groups: ${POLICY[a.groups] ?? a.groups}.`;
    $('access-limits').textContent = [
      a.rateLimit.messages > 0 ? `At most ${a.rateLimit.messages} messages per ${a.rateLimit.perSeconds} s per sender.` : 'No rate limit.',
      `Spending: ${formatBudget({ todayCostUsd: a.todayCostUsd, dailyBudgetUsd: a.dailyBudgetUsd, reached: a.dailyBudgetUsd > 0 && a.todayCostUsd >= a.dailyBudgetUsd })}.`,
    ].join(' ');
    renderEntries($('allowed-senders'), a.senders, 'nobody yet');
    renderEntries($('allowed-chats'), a.chats, 'no group chats yet');
    renderEntries(
      $('access-admins'),
      a.admins.map((id) => ({ id, source: 'config' })),
      'no admins: config-changing commands only from the terminal and the HTTP API',
    );
    return a;
  }

  async function loadRefusals() {
    const { refusals } = await api('/api/access/refusals?limit=50');
    $('refusals-count').textContent = String(refusals.length);
    if (refusals.length === 0) return $('refusals').replaceChildren(el('li', { class: 'empty', text: 'no refused messages' }));
    $('refusals').replaceChildren(...refusals.map((r) => refusalItem(r, labelOf)));
  }

  return { load, loadRefusals };
}
