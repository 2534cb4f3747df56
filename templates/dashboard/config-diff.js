// What to PATCH when a structured setting was edited as JSON: only the leaves that changed, keys
// removed become null (the server deletes them), and a masked secret left as shown is omitted,
// so the server keeps the real value and the page never sends a secret it did not get.
export const MASK = '********';

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

export const sameValue = (a, b) => JSON.stringify(a) === JSON.stringify(b);

export function containsMask(value) {
  if (value === MASK) return true;
  if (Array.isArray(value)) return value.some(containsMask);
  if (isObject(value)) return Object.values(value).some(containsMask);
  return false;
}

/** The partial record turning `before` into `after`, or undefined when nothing changed. */
export function diffForPatch(before, after) {
  if (isObject(before) && isObject(after)) {
    const out = {};
    for (const [k, v] of Object.entries(after)) {
      const d = k in before ? diffForPatch(before[k], v) : containsMask(v) ? maskError() : v;
      if (d !== undefined) out[k] = d;
    }
    for (const k of Object.keys(before)) if (!(k in after)) out[k] = null;
    return Object.keys(out).length ? out : undefined;
  }
  if (after === MASK) return undefined;
  if (sameValue(before, after)) return undefined;
  // Arrays and scalars replace whole; a mask inside one cannot be merged back, so it is refused.
  return containsMask(after) ? maskError() : after;
}

function maskError() {
  throw new Error(`replace ${MASK} with a value (masked secrets can be kept only where they were)`);
}
