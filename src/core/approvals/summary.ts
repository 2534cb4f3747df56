/**
 * What an approval request shows of a tool call: the command, else the file or URL, else the
 * input as compact JSON (or the engine's own title). Safe to put in a chat message: one line,
 * no control or bidirectional-override characters, at most SUMMARY_MAX characters, secret values
 * masked (before truncation, so no half of a secret survives the cut).
 */
export const SUMMARY_MAX = 200;

const PATH_KEYS = ['file_path', 'filePath', 'path', 'notebook_path', 'url', 'pattern'];

export function formatApprovalSummary(input: unknown, title: string | undefined, mask: (text: string) => string): string {
  const fields = input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
  const command = fields.command ?? fields.cmd;
  const pathKey = PATH_KEYS.find((k) => typeof fields[k] === 'string');
  const raw =
    typeof command === 'string'
      ? command
      : Array.isArray(command)
        ? command.map(String).join(' ')
        : pathKey
          ? String(fields[pathKey])
          : Object.keys(fields).length === 0 && title
            ? title
            : compactJson(input);
  const flat = mask(raw)
    // C0/C1 controls and the bidirectional controls that can make shown text lie about its order.
    .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > SUMMARY_MAX ? `${flat.slice(0, SUMMARY_MAX - 1)}…` : flat || '(no details)';
}

function compactJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
