// Quick test: POST /chat through fetch and a stream reader (EventSource cannot POST), showing
// the reply as it streams, each tool call, the completion status, and each approval request
// (skipPermissions: false) with Allow / Deny (POST /approve). A request shows its whole `detail`:
// the server's one formatting (invisible and direction-changing characters already written as
// escapes), set as text, never as HTML.
import { $, api, el, formatDuration, readSseData, token } from './api.js';

export function setupQuickTest() {
  const form = $('qt-form');
  const out = $('qt-output');
  const tools = $('qt-tools');
  const status = $('qt-status');
  const send = $('qt-send');

  const setStatus = (text, cls = '') => {
    status.textContent = text;
    status.className = `pill ${cls}`;
  };

  const approvals = $('qt-approvals');
  const showApproval = (e, sessionKey) => {
    const status = el('span', { class: 'muted' });
    const answer = async (decision) => {
      for (const b of item.querySelectorAll('button')) b.disabled = true;
      try {
        await api('/approve', { method: 'POST', json: { sessionKey, id: e.id, decision } });
        status.textContent = decision === 'deny' ? ' denied' : ' allowed';
      } catch (err) {
        status.textContent = ` ${err.message}`;
      }
    };
    const item = el('li', { class: 'approval', attrs: { 'data-approval': e.id } }, [
      el('strong', { text: 'Approval needed: ' }),
      el('code', { text: e.tool }),
      el('pre', { class: 'output approval-detail', text: e.detail ?? e.summary }),
      el('button', { text: 'Allow', attrs: { type: 'button' }, on: { click: () => answer('allow') } }),
      el('button', { class: 'secondary', text: 'Deny', attrs: { type: 'button' }, on: { click: () => answer('deny') } }),
      status,
    ]);
    approvals.append(item);
  };

  const handle = (e, sessionKey) => {
    if (e.type === 'text') out.append(e.content);
    else if (e.type === 'approval_request') showApproval(e, sessionKey);
    else if (e.type === 'tool_call') tools.append(el('li', {}, [el('code', { text: e.name }), el('span', { class: 'muted', text: ` ${e.args ?? ''}` })]));
    else if (e.type === 'tool_result') tools.append(el('li', { class: 'muted', text: `→ ${String(e.content).slice(0, 200)}` }));
    else if (e.type === 'error') $('qt-error').textContent = e.message;
    else if (e.type === 'completion') {
      const cls = e.status === 'completed' ? 'ok' : e.status === 'silent' ? '' : 'bad';
      setStatus(e.status, cls);
      $('qt-meta').textContent = e.durationMs !== undefined ? `${formatDuration(e.durationMs)}${e.sessionId ? ` · engine session ${e.sessionId}` : ''}` : '';
      if (e.status === 'completed' && out.textContent === '' && e.finalText) out.textContent = e.finalText;
    }
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const message = $('qt-message').value;
    const sessionKey = $('qt-session').value.trim() || 'default';
    if (!message.trim()) return;
    out.textContent = '';
    tools.replaceChildren();
    approvals.replaceChildren();
    $('qt-error').textContent = '';
    $('qt-meta').textContent = '';
    setStatus('running…');
    send.disabled = true;
    try {
      const res = await fetch('/chat', {
        method: 'POST',
        headers: { authorization: `Bearer ${token.get() ?? ''}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message, sessionKey }),
      });
      if (!res.ok) throw new Error((await res.json().catch(() => ({}))).error ?? `HTTP ${res.status}`);
      if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
        // A slash command answers one JSON object.
        const body = await res.json();
        out.textContent = body.text ?? JSON.stringify(body, null, 2);
        setStatus('command', 'ok');
        return;
      }
      for await (const data of readSseData(res.body)) {
        try {
          handle(JSON.parse(data), sessionKey);
        } catch {
          // not JSON: not one of ours
        }
      }
    } catch (err) {
      $('qt-error').textContent = err.message;
      setStatus('failed', 'bad');
    } finally {
      send.disabled = false;
    }
  });

  $('qt-abort').addEventListener('click', async () => {
    const sessionKey = $('qt-session').value.trim() || 'default';
    try {
      const r = await api('/abort', { method: 'POST', json: { sessionKey } });
      if (!r.aborted) $('qt-meta').textContent = 'nothing was running on that session';
    } catch (err) {
      $('qt-error').textContent = err.message;
    }
  });
}
