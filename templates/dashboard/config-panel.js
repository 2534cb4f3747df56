// The configuration panel: every setting with the value in the file (or the default in force),
// edited inline through PATCH /api/config. Secrets arrive masked and are sent back only when the
// operator typed a new value: an untouched mask never leaves the page.
import { $, api, el } from './api.js';
import { CONFIG_GROUPS, KNOWN_TOP_LEVEL, setEngineChoices } from './config-fields.js';
import { containsMask, diffForPatch, MASK, sameValue } from './config-diff.js';

const NO_CHANGE = Symbol('no change');

const valueAt = (obj, path) => path.reduce((cur, k) => (cur !== null && typeof cur === 'object' ? cur[k] : undefined), obj);
const nest = (path, value) => path.reduceRight((inner, k) => ({ [k]: inner }), value);

function display(field, value) {
  if (value === undefined || value === null) return 'not set';
  if (field.type === 'list') return value.length ? value.join(', ') : 'none';
  if (field.type === 'json' || typeof value === 'object') return JSON.stringify(value, null, 2);
  return String(value);
}

function control(field, raw, effective) {
  const id = `cfg-${field.path.join('-')}`;
  const start = raw ?? effective;
  if (field.type === 'enum' || field.type === 'bool') {
    const options = field.type === 'bool' ? ['true', 'false'] : field.options;
    const select = el('select', { attrs: { id, 'aria-label': field.path.join('.') } }, [
      field.required ? null : el('option', { text: '(remove from file: default)', attrs: { value: '' } }),
      ...options.map((o) => el('option', { text: field.labels?.[o] ?? o, attrs: { value: o } })),
    ]);
    select.value = raw === undefined ? (field.required ? String(start) : '') : String(raw);
    return select;
  }
  if (['text', 'list', 'json'].includes(field.type)) {
    const text =
      field.type === 'list' ? (start ?? []).join('\n') : field.type === 'json' ? (start === undefined ? '' : JSON.stringify(start, null, 2)) : (raw ?? '');
    const area = el('textarea', { attrs: { id, rows: field.type === 'json' ? 8 : 4, spellcheck: 'false', 'aria-label': field.path.join('.') } });
    area.value = text;
    return area;
  }
  const input = el('input', {
    attrs: {
      id,
      'aria-label': field.path.join('.'),
      type: field.type === 'secret' ? 'password' : field.type === 'number' || field.type === 'int' ? 'number' : 'text',
      step: field.type === 'int' ? '1' : field.type === 'number' ? 'any' : undefined,
      autocomplete: 'off',
      placeholder: field.type === 'secret' ? 'type a new value, or ${VAR}; empty keeps the current one' : undefined,
    },
  });
  if (field.type !== 'secret') input.value = raw === undefined || typeof raw === 'object' ? '' : String(raw);
  return input;
}

/** The value to PATCH for this field, NO_CHANGE, or a thrown Error saying what is wrong. */
function readControl(field, node, raw, effective) {
  const v = node.value;
  let next;
  switch (field.type) {
    case 'secret':
      if (v === '' || v === MASK) return NO_CHANGE;
      next = v;
      break;
    case 'number':
    case 'int':
      if (v.trim() === '') next = null;
      else if (!Number.isFinite(Number(v))) throw new Error('expected a number');
      else next = Number(v);
      break;
    case 'bool':
      next = v === '' ? null : v === 'true';
      break;
    case 'enum':
      next = v === '' ? null : v;
      break;
    case 'list': {
      const items = v
        .split('\n')
        .map((s) => s.trim())
        .filter(Boolean);
      next = items.length ? items : null;
      break;
    }
    case 'json': {
      if (v.trim() === '') {
        next = null;
        break;
      }
      let parsed;
      try {
        parsed = JSON.parse(v);
      } catch (err) {
        throw new Error(`not valid JSON: ${err.message}`);
      }
      if (raw === undefined) {
        if (sameValue(parsed, effective)) return NO_CHANGE;
        if (containsMask(parsed)) throw new Error(`replace ${MASK} with a value`);
        return parsed;
      }
      const d = diffForPatch(raw, parsed);
      return d === undefined ? NO_CHANGE : d;
    }
    default:
      next = v.trim() === '' ? null : v;
  }
  if (next === null && raw === undefined) return NO_CHANGE;
  return sameValue(next, raw) ? NO_CHANGE : next;
}

export function createConfigPanel() {
  const state = { raw: {}, effective: {}, editing: null, notices: new Map(), errors: new Map(), restart: new Set() };

  const load = async () => {
    const [file, effective, engines] = await Promise.all([api('/api/config'), api('/api/config/effective'), api('/api/engines')]);
    setEngineChoices(engines.engines);
    state.raw = file.config;
    state.effective = effective.config;
    render();
  };

  const save = async (field, node) => {
    const key = field.path.join('.');
    state.errors.delete(key);
    let value;
    try {
      value = readControl(field, node, valueAt(state.raw, field.path), valueAt(state.effective, field.path));
    } catch (err) {
      state.errors.set(key, [err.message]);
      return render();
    }
    if (value === NO_CHANGE) {
      state.editing = null;
      state.notices.set(key, { text: 'unchanged', cls: '' });
      return render();
    }
    try {
      const res = await api('/api/config', { method: 'PATCH', json: nest(field.path, value) });
      state.raw = res.config;
      state.editing = null;
      state.notices.set(key, res.needsRestart ? { text: 'restart needed', cls: 'warn' } : { text: 'applied', cls: 'ok' });
      if (res.needsRestart) state.restart.add(key);
      state.effective = (await api('/api/config/effective')).config;
    } catch (err) {
      const issues = err.body?.issues?.map((i) => `${i.path}: ${i.message}`);
      state.errors.set(key, issues?.length ? issues : [err.message]);
    }
    render();
  };

  const row = (field) => {
    const key = field.path.join('.');
    const raw = valueAt(state.raw, field.path);
    const effective = valueAt(state.effective, field.path);
    const notice = state.notices.get(key);
    const head = el('div', { class: 'setting-head' }, [
      el('label', { text: key, attrs: { for: `cfg-${field.path.join('-')}` } }),
      field.restart ? el('span', { class: 'tag', text: 'restart', attrs: { title: 'changing this needs a gateway restart' } }) : null,
      field.help ? el('span', { class: 'muted', text: field.help }) : null,
    ]);
    const children = [head];
    if (state.editing === key) {
      const node = control(field, raw, effective);
      children.push(
        el('div', { class: 'setting-edit' }, [
          node,
          el('div', { class: 'row' }, [
            el('button', { text: 'Save', attrs: { type: 'button', 'data-action': 'save' }, on: { click: () => void save(field, node) } }),
            el('button', {
              class: 'secondary',
              text: 'Cancel',
              attrs: { type: 'button' },
              on: {
                click: () => {
                  state.editing = null;
                  state.errors.delete(key);
                  render();
                },
              },
            }),
          ]),
        ]),
      );
    } else {
      const current = raw ?? effective;
      const shown = display(field, current);
      // A list (persona boundaries, permission paths) reads as a list, one item per line.
      const valueNode =
        field.type === 'list' && Array.isArray(current) && current.length > 0
          ? el(
              'ul',
              { class: 'value value-list' },
              current.map((item) => el('li', { text: item })),
            )
          : field.type === 'json' || field.type === 'text'
            ? el('pre', { class: 'value', text: shown })
            : el('span', { class: 'value', text: shown });
      children.push(
        el('div', { class: 'setting-value' }, [
          valueNode,
          raw === undefined && effective !== undefined ? el('span', { class: 'muted', text: '(default)' }) : null,
          el('button', {
            class: 'secondary',
            text: 'Edit',
            attrs: { type: 'button', 'data-action': 'edit' },
            on: {
              click: () => {
                state.editing = key;
                state.notices.delete(key);
                render();
              },
            },
          }),
          notice ? el('span', { class: `notice pill ${notice.cls}`, text: notice.text, attrs: { role: 'status' } }) : null,
        ]),
      );
    }
    for (const message of state.errors.get(key) ?? []) children.push(el('p', { class: 'error', text: message }));
    return el('div', { class: 'setting', attrs: { 'data-path': key } }, children);
  };

  const render = () => {
    const extra = Object.keys(state.raw)
      .filter((k) => !KNOWN_TOP_LEVEL.has(k))
      .map((k) => ({ path: [k], type: 'json', help: 'kept in the file, ignored by service' }));
    const groups = [...CONFIG_GROUPS, ...(extra.length ? [{ title: 'Other keys in service.yaml', fields: extra }] : [])];
    const sections = groups.map((g) =>
      el('section', { class: 'config-group', attrs: { 'data-group': g.title } }, [el('h3', { text: g.title }), ...g.fields.map(row)]),
    );
    $('config').replaceChildren(...sections);
    // A long view on a phone: one tap to each group (buttons, not #anchors: the fragment names the view).
    $('config-groups').replaceChildren(
      ...groups.map((g, i) => el('button', { class: 'secondary', text: g.title, attrs: { type: 'button' }, on: { click: () => jumpTo(sections[i]) } })),
    );
    const banner = $('config-restart');
    banner.hidden = state.restart.size === 0;
    banner.textContent = `Saved to service.yaml. Restart the gateway to apply: ${[...state.restart].join(', ')}`;
  };

  $('config-reload').addEventListener('click', () => void load().catch((err) => ($('config-restart').textContent = err.message)));
  return { load };
}

/** Scroll a group to just below the sticky header, whatever its height (the phone menu takes two rows). */
function jumpTo(section) {
  const header = document.querySelector('header');
  const below = (header?.getBoundingClientRect().height ?? 0) + 8;
  window.scrollTo({ top: section.getBoundingClientRect().top + window.scrollY - below });
}
