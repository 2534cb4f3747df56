import { describeToolCall, showInvisible } from '../../core/approvals/summary.js';
import { codeSpan } from '../approval-prompt.js';

/** Characters of the tool and its input a status line shows at most. */
export const TOOL_STATUS_MAX = 80;

/**
 * The line under a growing reply that names the tool running now (`streaming.showToolCalls`):
 * `running: Bash ls -la`. The input is shown the way an approval request shows it (the command,
 * else the file or URL, else compact JSON; secrets masked, invisible characters as escapes),
 * on one line, cut at TOOL_STATUS_MAX with `…`, in a code span so that no platform reads it as
 * markup.
 */
export function formatToolStatus(call: { name: string; args: string }, mask: (text: string) => string): string {
  let input: unknown;
  try {
    input = JSON.parse(call.args);
  } catch {
    input = call.args;
  }
  const { detail } = describeToolCall(input, undefined, mask);
  const name = showInvisible(call.name);
  const what = detail === '(no details)' || detail === '{}' ? name : `${name} ${detail}`;
  const chars = Array.from(what);
  const cut = chars.length > TOOL_STATUS_MAX ? `${chars.slice(0, TOOL_STATUS_MAX - 1).join('')}…` : what;
  return `_running:_ ${codeSpan(cut)}`;
}
