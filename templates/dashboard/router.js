// One view at a time, chosen by the URL fragment (#/config): static files need no server routes,
// and a view survives a reload. The token link's fragment (#token=…) is never a view: api.js
// takes it out of the address bar before the router first looks.
export const VIEWS = ['overview', 'chat', 'activity', 'tasks', 'access', 'config', 'skills', 'fleet', 'api'];

/** `#/config` → 'config'; an empty, unknown or token fragment → 'overview'. */
export function parseView(hash) {
  const m = /^#\/([a-z]*)$/.exec(hash);
  const name = m?.[1] || 'overview';
  return VIEWS.includes(name) ? name : 'overview';
}

/**
 * Shows the panels of the current view (each panel lists its views in data-views) and marks the
 * menu entry. Until a token is accepted the page is in the `locked` view whatever the fragment.
 */
export function createRouter() {
  const state = { unlocked: false, view: parseView(location.hash) };

  const apply = () => {
    const shown = state.unlocked ? state.view : 'locked';
    document.body.dataset.view = shown;
    for (const panel of document.querySelectorAll('[data-views]')) panel.hidden = !panel.dataset.views.split(' ').includes(shown);
    for (const node of document.querySelectorAll('.private')) node.hidden = !state.unlocked;
    for (const link of document.querySelectorAll('#menu a')) {
      if (link.dataset.view === state.view) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
  };

  return {
    get view() {
      return state.view;
    },
    /** Call on hashchange: picks the view from the fragment and starts it at the top. */
    follow() {
      const next = parseView(location.hash);
      if (next === state.view) return;
      state.view = next;
      apply();
      window.scrollTo(0, 0);
    },
    setUnlocked(on) {
      state.unlocked = on;
      apply();
    },
    apply,
  };
}
