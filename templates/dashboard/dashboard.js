// The dashboard's entry: the public status panel always; the menu and every other view only once
// a token the API accepts is known (from #token=… or the form), kept in sessionStorage for this tab.
import { createAccessPanel, renderBudget } from './access.js';
import { $, api, createSourceLabels, token } from './api.js';
import { createActivityFeed, isEscalation, loadEscalations } from './activity.js';
import { createChatView } from './chat.js';
import { createConfigPanel } from './config-panel.js';
import { createMetricsPanel } from './metrics.js';
import { loadFleet, renderChannels, renderSkills, renderStatusExtras, showPublicStatus } from './panels.js';
import { setupQuickTest } from './quick-test.js';
import { createRouter } from './router.js';
import { renderSamples } from './samples.js';
import { createTasksPanel } from './tasks.js';

const REFRESH_MS = 10_000;

const setPill = (text, cls) => {
  $('connection').textContent = text;
  $('connection').className = `pill ${cls}`;
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
  // Before anything reads the fragment: #token=… is a credential, never a view.
  token.takeFromFragment();
  const router = createRouter();
  const labels = createSourceLabels();
  const feed = createActivityFeed({ onRecord: (r) => onActivity(r), labelOf: labels.of });
  const metrics = createMetricsPanel({ labelOf: labels.of });
  const config = createConfigPanel();
  const tasks = createTasksPanel();
  const chat = createChatView();
  const access = createAccessPanel({ labelOf: labels.of, onChange: () => void refreshStatus().catch(report('status')) });
  let unlocked = false;
  let unlocking = false;
  let samplesShown = false;

  const refreshStatus = async () => {
    const s = await api('/api/status');
    labels.learn(s.channels);
    renderChannels(s.channels);
    renderSkills(s.skills);
    metrics.render(s.metrics);
    renderBudget(s.budget);
    renderStatusExtras(s);
    if (!samplesShown) {
      renderSamples(s);
      samplesShown = true;
    }
    return s;
  };
  const reloadEscalations = () => loadEscalations(labels.of);
  const refreshCharts = debounce(() => void Promise.all([refreshStatus(), metrics.loadTimeline()]).catch(report('metrics')), 300);
  const refreshEscalations = debounce(() => void reloadEscalations().catch(report('escalations')), 300);
  const refreshAccess = debounce(() => void Promise.all([access.load(), access.loadRefusals()]).catch(report('access')), 300);
  function onActivity(r) {
    refreshCharts();
    if (isEscalation(r)) refreshEscalations();
    if (r.status === 'refused') refreshAccess();
  }

  const unlock = async () => {
    if (!token.get() || unlocking) return;
    unlocking = true;
    try {
      const s = await refreshStatus();
      unlocked = true;
      router.setUnlocked(true);
      $('token-error').hidden = true;
      feed.fill(s.recentMessages ?? []);
      feed.connect();
      if (router.view === 'chat') void chat.enter();
      await Promise.all([metrics.loadTimeline(), reloadEscalations(), loadFleet(), config.load(), tasks.load(), access.load(), access.loadRefusals()]);
    } catch (err) {
      if (err.status === 401) {
        token.clear();
        lock();
      }
      $('token-error').textContent = err.status === 401 ? 'The token was not accepted.' : err.message;
      $('token-error').hidden = false;
    } finally {
      unlocking = false;
    }
  };

  const lock = () => {
    unlocked = false;
    feed.close();
    router.setUnlocked(false);
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
  window.addEventListener('hashchange', () => {
    // A #token= link pasted into an open tab unlocks it; any other fragment picks a view.
    if (token.takeFromFragment()) void unlock();
    router.follow();
    if (unlocked && router.view === 'tasks') void tasks.load().catch(report('tasks'));
    if (unlocked && router.view === 'chat') void chat.enter();
  });
  $('tasks-reload').addEventListener('click', () => void tasks.load().catch(report('tasks')));
  $('timeline-range').addEventListener('change', () => void metrics.loadTimeline().catch(report('timeline')));
  setupQuickTest();

  const tick = async () => {
    try {
      await showPublicStatus();
      setPill('online', 'ok');
    } catch {
      setPill('offline', 'bad');
    }
    // A token the gateway could not check (it was restarting, the network dropped) is tried again.
    if (!unlocked && token.get()) void unlock();
    if (unlocked) await Promise.all([refreshStatus(), loadFleet(), access.load(), router.view === 'tasks' ? tasks.load() : null]).catch(report('refresh'));
  };

  router.apply();
  void tick();
  void unlock();
  setInterval(() => void tick(), REFRESH_MS);
}

start();
