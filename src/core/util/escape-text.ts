// C0 controls but tab, DEL, C1 controls, the Unicode line and paragraph separators, and the
// invisible and direction-changing characters (zero-width ones, bidi marks, embeddings,
// overrides and isolates), which can make a line read as something else than it holds.
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r' };

/**
 * Text from outside (a chat's display names and messages, a client's URL) as one line that shows
 * what it holds: `\n`, `\r` as written in source; other control characters (and invisible or
 * direction-changing ones) as `\xNN` / `\uNNNN`. For every such value that reaches a log line or
 * a terminal: no forged lines, no terminal escapes (ANSI, OSC), no reordered text.
 */
export function escapeControl(text: string): string {
  return text.replace(CONTROL, (c) => {
    const named = NAMED[c];
    if (named) return named;
    const code = c.charCodeAt(0);
    return code > 0xff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\x${code.toString(16).padStart(2, '0')}`;
  });
}

/**
 * JSON (as JSON.stringify wrote it) for a terminal: the characters JSON leaves raw inside strings
 * (C1 controls, DEL, line separators, invisible and direction-changing ones) as `\uNNNN`, so the
 * text stays the same JSON and shows what it holds.
 */
export function escapeJsonForTerminal(json: string): string {
  return json
    .split('\n')
    .map((line) => line.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))
    .join('\n');
}
