// The dashboard page: everything user-controlled is set with textContent, never as HTML.
// The token comes from the URL fragment (#token=…, never sent to the server) or the form, and
// is kept in sessionStorage for this tab only.
(() => {
  const $ = (id) => document.getElementById(id);
  const KEY = 'service-token';

  function takeTokenFromFragment() {
    const m = /(?:^|&)token=([^&]+)/.exec(location.hash.slice(1));
    if (!m) return;
    sessionStorage.setItem(KEY, decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }

  const token = () => sessionStorage.getItem(KEY);

  async function api(path) {
    const res = await fetch(path, { headers: { Authorization: `Bearer ${token()}` } });
    if (res.status === 401) throw Object.assign(new Error('the token was not accepted'), { unauthorized: true });
    if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
    return res.json();
  }

  function formatUptime(ms) {
    const s = Math.floor(ms / 1000);
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    return d ? `${d}d ${h}h` : h ? `${h}h ${m}m` : `${m}m ${s % 60}s`;
  }

  async function showPublicStatus() {
    const res = await fetch('/health');
    const h = await res.json();
    $('bot-name').textContent = h.name;
    document.title = `${h.name} · service`;
    $('f-engine').textContent = h.engine;
    $('f-model').textContent = h.model || '(engine default)';
    $('f-uptime').textContent = formatUptime(h.uptime);
    $('f-version').textContent = h.version;
    $('connection').textContent = 'online';
    $('connection').className = 'pill ok';
  }

  function renderList(el, rows) {
    el.replaceChildren(...rows.map(([left, right, cls]) => {
      const li = document.createElement('li');
      const a = document.createElement('span');
      a.textContent = left;
      const b = document.createElement('span');
      b.textContent = right;
      if (cls) b.className = cls;
      li.append(a, b);
      return li;
    }));
  }

  async function showPrivate() {
    if (!token()) return;
    try {
      const s = await api('/api/status');
      for (const el of document.querySelectorAll('.private')) el.hidden = false;
      $('panel-token').hidden = true;
      renderList($('channels'), s.channels.map((c) => [c.type, c.status.replace('_', ' '), `status-${c.status}`]));
      $('m-total').textContent = String(s.metrics.totalMessages);
      $('m-cost').textContent = `$${s.metrics.totalCostUsd.toFixed(4)}`;
      $('m-avg').textContent = `${(s.metrics.avgDurationMs / 1000).toFixed(1)} s`;
      renderList($('m-sources'), Object.entries(s.metrics.messagesBySource).map(([k, v]) => [k, String(v)]));
    } catch (err) {
      if (err.unauthorized) sessionStorage.removeItem(KEY);
      $('token-error').textContent = err.message;
      $('token-error').hidden = false;
    }
  }

  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, $('token-input').value.trim());
    $('token-input').value = '';
    $('token-error').hidden = true;
    void showPrivate();
  });

  takeTokenFromFragment();
  const refresh = () => Promise.allSettled([showPublicStatus(), showPrivate()]).then(([pub]) => {
    if (pub.status === 'rejected') {
      $('connection').textContent = 'offline';
      $('connection').className = 'pill bad';
    }
  });
  void refresh();
  setInterval(refresh, 10_000);
})();
