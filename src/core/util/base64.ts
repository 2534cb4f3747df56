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

/**
 * The bytes of strict base64 text; undefined when the text is not base64 (or empty).
 * Checked by one loop over the characters, not a regular expression: a body holds up to 36 MB of
 * base64, and V8 may compile a pattern over it into code that backtracks once per character,
 * which ran out of stack on a 7 MB image in CI.
 */
export function decodeBase64(text: string): Buffer | undefined {
  let chars = 0;
  let padding = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isAsciiSpace(c)) continue;
    chars++;
    if (c === EQUALS) {
      if (++padding > 2) return undefined;
    } else if (padding > 0 || !isAlphabet(c)) {
      return undefined;
    }
  }
  if (chars === 0 || chars % 4 !== 0) return undefined;
  // Buffer skips the whitespace itself.
  return Buffer.from(text, 'base64');
}

const EQUALS = 0x3d;

function isAsciiSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

function isAlphabet(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f;
}
