// The dashboard's entry: the public status panel always; every other panel only once a token
// the API accepts is known (from #token=… or the form), kept in sessionStorage for this tab.
import { $, api, token } from './api.js';
import { createActivityFeed, isEscalation, loadEscalations } from './activity.js';
import { createConfigPanel } from './config-panel.js';
import { loadTimeline, renderMetrics } from './metrics.js';
import { loadFleet, renderChannels, renderSkills, renderStatusExtras, showPublicStatus } from './panels.js';
import { setupQuickTest } from './quick-test.js';
import { renderSamples } from './samples.js';

const REFRESH_MS = 10_000;

const setPill = (text, cls) => {
  $('connection').textContent = text;
  $('connection').className = `pill ${cls}`;
};

const showPrivate = (on) => {
  for (const node of document.querySelectorAll('.private')) node.hidden = !on;
  $('panel-token').hidden = on;
};

const report = (what) => (err) => console.warn(`${what}: ${err.message}`);

/** Coalesce bursts (a busy feed) into one reload of the panels that depend on new activity. */
function debounce(fn, ms) {
  let timer;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

function start() {
  const feed = createActivityFeed({ onRecord: (r) => onActivity(r) });
  const config = createConfigPanel();
  let unlocked = false;
  let samplesShown = false;

  const refreshStatus = async () => {
    const s = await api('/api/status');
    renderChannels(s.channels);
    renderSkills(s.skills);
    renderMetrics(s.metrics);
    renderStatusExtras(s);
    if (!samplesShown) {
      renderSamples(s);
      samplesShown = true;
    }
    return s;
  };
  const refreshCharts = debounce(() => void Promise.all([refreshStatus(), loadTimeline()]).catch(report('metrics')), 300);
  const refreshEscalations = debounce(() => void loadEscalations().catch(report('escalations')), 300);
  function onActivity(r) {
    refreshCharts();
    if (isEscalation(r)) refreshEscalations();
  }

  const unlock = async () => {
    if (!token.get()) return;
    try {
      const s = await refreshStatus();
      unlocked = true;
      showPrivate(true);
      $('token-error').hidden = true;
      feed.fill(s.recentMessages ?? []);
      feed.connect();
      await Promise.all([loadTimeline(), loadEscalations(), loadFleet(), config.load()]);
    } catch (err) {
      if (err.status === 401) {
        token.clear();
        lock();
      }
      $('token-error').textContent = err.status === 401 ? 'The token was not accepted.' : err.message;
      $('token-error').hidden = false;
    }
  };

  const lock = () => {
    unlocked = false;
    feed.close();
    showPrivate(false);
  };

  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const value = $('token-input').value.trim();
    $('token-input').value = '';
    if (!value) return;
    token.set(value);
    void unlock();
  });
  $('forget-token').addEventListener('click', () => {
    token.clear();
    lock();
  });
  $('timeline-range').addEventListener('change', () => void loadTimeline().catch(report('timeline')));
  setupQuickTest();

  const tick = async () => {
    try {
      await showPublicStatus();
      setPill('online', 'ok');
    } catch {
      setPill('offline', 'bad');
    }
    if (unlocked) await Promise.all([refreshStatus(), loadFleet()]).catch(report('refresh'));
  };

  token.takeFromFragment();
  void tick();
  void unlock();
  setInterval(() => void tick(), REFRESH_MS);
}

start();
