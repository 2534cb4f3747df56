/**
 * What an approval request shows of a tool call, the one formatting every surface uses (the six
 * channels, the dashboard, `service chat`, the HTTP API): the command, else the file or URL,
 * else the input as compact JSON (or the engine's own title), with
 *
 * - secret values masked (before anything is cut, so no half of a secret survives a cut);
 * - every character that would not show, or would change the order of what shows, written as an
 *   escape: a line break as `\n`, a tab as `\t`, a carriage return as `\r`, anything else
 *   (zero-width, bidirectional controls, other format and control characters, spaces other than
 *   the plain one, unassigned and private-use code points) as `\u{200B}`; a run of one escaped
 *   character as `\u{200B}×220`. What is approved then reads as what runs, on one line;
 * - `summary`: the whole text when it fits PROMPT_MAX characters, else its start ending in `…`
 *   (a prompt then says plainly that it is cut, and that `/approval <id>` shows all of it);
 * - `detail`: the whole text. Past DETAIL_MAX characters nobody can review it in a chat, so such
 *   a request is denied unseen (approvals.ts).
 */
export const PROMPT_MAX = 500;
export const DETAIL_MAX = 16_000;

export interface ToolCallText {
  summary: string;
  detail: string;
  /** Whether `summary` is only the start of `detail`. */
  cut: boolean;
}

const PATH_KEYS = ['file_path', 'filePath', 'path', 'notebook_path', 'url', 'pattern'];

export function describeToolCall(input: unknown, title: string | undefined, mask: (text: string) => string): ToolCallText {
  const pieces = toVisiblePieces(mask(rawText(input, title)).trim());
  const detail = pieces.join('') || '(no details)';
  if (detail.length <= PROMPT_MAX) return { summary: detail, detail, cut: false };
  let summary = '';
  for (const piece of pieces) {
    if (summary.length + piece.length > PROMPT_MAX - 1) break;
    summary += piece;
  }
  return { summary: `${summary}…`, detail, cut: true };
}

/** Text from outside (a display name, a command) with its invisible and direction-changing characters as escapes. */
export function showInvisible(text: string): string {
  return toVisiblePieces(text).join('');
}

/** What a prompt adds when its text is cut: how much is shown, and how to see the rest. */
export function formatCutNotice(request: { id: string; summary: string; detail: string }): string {
  const shown = request.summary.length - 1;
  return `(cut: ${shown.toLocaleString('en-US')} of ${request.detail.length.toLocaleString('en-US')} characters shown; send /approval ${request.id} to see all of it before you answer)`;
}

// --- internal ---

function rawText(input: unknown, title: string | undefined): string {
  const fields = input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
  const command = fields.command ?? fields.cmd;
  if (typeof command === 'string') return command;
  if (Array.isArray(command)) return command.map(String).join(' ');
  const pathKey = PATH_KEYS.find((k) => typeof fields[k] === 'string');
  if (pathKey) return String(fields[pathKey]);
  if (Object.keys(fields).length === 0 && title) return title;
  return compactJson(input);
}

/**
 * Characters that do not show as themselves: controls (C0, C1), format characters (zero-width,
 * bidirectional controls, BOM, tags), line and paragraph separators, private-use, surrogate and
 * unassigned code points, the default-ignorable ones (variation selectors, Hangul fillers) and
 * the blank-looking letters; and every space but U+0020.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}\u2800\u3164\uffa0\u115f\u1160]|[^\S ]/u;
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\t': '\\t', '\r': '\\r' };
/** A run of one escaped character at least this long is written once with its count. */
const RUN_MIN = 3;

function toVisiblePieces(text: string): string[] {
  const pieces: string[] = [];
  const chars = [...text];
  for (let i = 0; i < chars.length; ) {
    const ch = chars[i] as string;
    if (!HIDDEN.test(ch)) {
      pieces.push(ch);
      i++;
      continue;
    }
    let run = 1;
    while (chars[i + run] === ch) run++;
    const shown = NAMED[ch] ?? `\\u{${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}}`;
    if (run >= RUN_MIN) pieces.push(`${shown}×${run}`);
    else for (let k = 0; k < run; k++) pieces.push(shown);
    i += run;
  }
  return pieces;
}

function compactJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
