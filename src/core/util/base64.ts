/**
 * Payloads sent as base64 in JSON bodies (images and files on `POST /chat`): an optional
 * `data:<type>;base64,` prefix, then strict base64 (whitespace ignored, nothing else accepted, so
 * a typo is an error and not silently fewer bytes).
 */

/** The payload without its `data:` URL prefix; the prefix's type is used when none was given. */
export function splitDataUrl(data: string | Buffer, mimeType: string | undefined): { data: string | Buffer; mimeType: string | undefined } {
  if (typeof data !== 'string') return { data, mimeType };
  const prefix = /^data:([^;,]+);base64,/.exec(data);
  return prefix ? { data: data.slice(prefix[0].length), mimeType: mimeType ?? prefix[1] } : { data, mimeType };
}

/** The bytes of strict base64 text; undefined when the text is not base64 (or empty). */
export function decodeBase64(text: string): Buffer | undefined {
  const clean = text.replace(/\s+/g, '');
  if (clean === '' || clean.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(clean)) return undefined;
  return Buffer.from(clean, 'base64');
}
