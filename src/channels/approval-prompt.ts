import { formatCutNotice, showInvisible } from '../core/approvals/summary.js';
import type { ApprovalRequest } from '../core/approvals/approvals.js';

/**
 * What a chat shows when the engine asks before running a tool (an `approval_request` event): a
 * message saying what, and how to answer, which works on every platform as plain text; and the
 * same answers as buttons for adapters that have them (`askApproval`). A button sends its command
 * as a message from the person who pressed it, so a press and a typed `/allow` take one path.
 *
 * The command is core's text (summary.ts: escapes for what would not show, cut at PROMPT_MAX
 * with a notice naming `/approval <id>`); every value from outside (the command, the tool, the
 * requester's display name) goes into a code span, which no platform's markup reads as a link or
 * emphasis.
 */
export interface ApprovalPrompt {
  id: string;
  tool: string;
  summary: string;
  /** The message (Markdown). */
  text: string;
  /** Buttons: the label, and the command line a press sends. */
  actions: Array<{ label: string; command: string }>;
}

export interface ApprovalPromptOptions {
  timeoutSeconds: number;
  /** Who may answer besides admins (group chats: the person who started the turn), as their display name. */
  requester?: string;
}

export function formatApprovalPrompt(
  request: Pick<ApprovalRequest, 'id' | 'tool' | 'summary' | 'detail' | 'cut' | 'adminOnly'>,
  opts: ApprovalPromptOptions,
): ApprovalPrompt {
  const { id, tool, summary } = request;
  const who = request.adminOnly
    ? " It touches the assistant's own files: only an admin can allow it."
    : opts.requester
      ? ` Only ${codeSpan(showInvisible(opts.requester))} or an admin can answer.`
      : '';
  const answers = request.adminOnly
    ? 'Reply /allow or /deny.'
    : 'Reply /allow, /deny, or /allow always (this tool without asking for the rest of this session).';
  const text = [
    `**Approval needed:** the assistant wants to use ${codeSpan(showInvisible(tool))}:`,
    codeSpan(summary),
    ...(request.cut ? [formatCutNotice(request)] : []),
    `${answers} No answer within ${formatWait(opts.timeoutSeconds)} means no.${who} (request ${id})`,
  ].join('\n');
  return {
    id,
    tool,
    summary,
    text,
    actions: [
      { label: 'Allow', command: `/allow ${id}` },
      { label: 'Deny', command: `/deny ${id}` },
      { label: `Always allow ${showInvisible(tool)}`, command: `/allow always ${id}` },
    ],
  };
}

/** Inline code that survives backticks in the text (a longer fence, padded). */
export function codeSpan(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return longest > 0 ? `${fence} ${text} ${fence}` : `${fence}${text}${fence}`;
}

// --- internal ---

function formatWait(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  return `${minutes} min`;
}
