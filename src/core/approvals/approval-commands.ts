import { commandResult, type SlashCommand } from '../commands/command-table.js';
import type { ApprovalDecision, ApprovalRequest, Approvals } from './approvals.js';

/**
 * `/approval [id]` shows the whole of what a waiting request would run (a prompt shows at most
 * PROMPT_MAX characters and says so when it cuts). `/allow [id]`, `/allow always [id]` and
 * `/deny [id]`: answer an approval waiting in this session. Anyone may send them; the registry decides who may answer (the person who started
 * the turn, an admin, the owner). They run at once, also while the turn that asks is running.
 */
export function createApprovalCommands(approvals: Approvals): SlashCommand[] {
  const answer =
    (base: 'allow' | 'deny'): SlashCommand['run'] =>
    async (args, call) => {
      const always = base === 'allow' && args.some((a) => a.toLowerCase() === 'always');
      const id = args.find((a) => a.toLowerCase() !== 'always');
      const decision: ApprovalDecision = always ? 'allow_always' : base;
      const out = approvals.answer({
        sessionKey: call.sessionKey,
        decision,
        privileged: call.privileged,
        ...(id ? { id } : {}),
        ...(call.caller ? { caller: call.caller } : {}),
      });
      return out.ok
        ? commandResult(out.text, { approval: out.request.id, decision: out.decision })
        : commandResult(out.text, { error: `approval_${out.reason}` });
    };
  return [
    {
      name: 'approval',
      usage: '/approval [id]',
      help: 'show the whole command (file, input) of an approval request waiting in this session',
      changesConfig: () => false,
      atOnce: true,
      async run(args, call) {
        const here = approvals.waiting(call.sessionKey);
        const id = args[0]?.trim().toLowerCase();
        const request = id ? here.find((r) => r.id === id) : here.length === 1 ? here[0] : undefined;
        if (request) return commandResult(formatWholeRequest(request), { approval: request.id, tool: request.tool, detail: request.detail });
        if (id)
          return commandResult(`No approval ${id} is waiting in this session (it may have been answered or timed out).`, { error: 'approval_unknown_id' });
        if (here.length === 0) return commandResult('Nothing is waiting for an approval in this session.', { error: 'approval_none_waiting' });
        return commandResult(`${here.length} approvals are waiting; name one: ${here.map((r) => `/approval ${r.id}`).join(', ')}`, {
          error: 'approval_ambiguous',
        });
      },
    },
    {
      name: 'allow',
      usage: '/allow [always] [id]',
      help: 'let the assistant run the tool it asked for (always: that tool for the rest of the session)',
      changesConfig: () => false,
      atOnce: true,
      run: answer('allow'),
    },
    {
      name: 'deny',
      usage: '/deny [id]',
      help: 'refuse the tool the assistant asked for (it goes on without it)',
      changesConfig: () => false,
      atOnce: true,
      run: answer('deny'),
    },
  ];
}

/** Wrapped every this many characters in the code block: a real line break of the command shows as `\n`, never as a break. */
const WRAP = 100;

/** The whole request as a code block (a fence longer than any backtick run in it), wrapped, with how to answer. */
export function formatWholeRequest(request: ApprovalRequest): string {
  const lines = request.detail.match(new RegExp(`[\\s\\S]{1,${WRAP}}`, 'gu')) ?? [''];
  const longest = Math.max(2, ...[...request.detail.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return [
    `Approval ${request.id}: the whole ${request.tool} call (${request.detail.length} characters; wrapped every ${WRAP}, a real line break shows as \\n):`,
    fence,
    ...lines,
    fence,
    `Answer with /allow ${request.id} or /deny ${request.id}.`,
  ].join('\n');
}
