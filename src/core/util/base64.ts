/**
 * Payloads sent as base64 in JSON bodies (images and files on `POST /chat`): an optional
 * `data:<type>;base64,` prefix, then strict base64 (ASCII whitespace ignored, nothing else
 * accepted, so a typo is an error and not silently fewer bytes).
 */

/** The payload without its `data:` URL prefix; the prefix's type is used when none was given. */
export function splitDataUrl(data: string | Buffer, mimeType: string | undefined): { data: string | Buffer; mimeType: string | undefined } {
  if (typeof data !== 'string') return { data, mimeType };
  const prefix = /^data:([^;,]+);base64,/.exec(data);
  return prefix ? { data: data.slice(prefix[0].length), mimeType: mimeType ?? prefix[1] } : { data, mimeType };
}

/** One character outside base64 and ASCII whitespace. */
const FOREIGN = /[^A-Za-z0-9+/=\t-\r ]/;
const SPACE = /[\t-\r ]/g;

/**
 * The bytes of strict base64 text; undefined when the text is not base64 (or empty).
 * The patterns here match one character each, never a repetition: a body holds up to 36 MB of
 * base64, and V8 may compile a repeated class over it into code that backtracks once per
 * character, which ran out of stack on a 7 MB image in CI. A search for one character stays in
 * native code (a loop in JavaScript took 0.4 s over 7 MB before the optimizing compiler starts).
 */
export function decodeBase64(text: string): Buffer | undefined {
  if (FOREIGN.test(text)) return undefined;
  const clean = text.replace(SPACE, '');
  const pad = clean.indexOf('=');
  const padding = pad === -1 ? '' : clean.slice(pad);
  if (clean === '' || clean.length % 4 !== 0 || padding.length > 2 || padding !== '='.repeat(padding.length)) return undefined;
  return Buffer.from(clean, 'base64');
}
