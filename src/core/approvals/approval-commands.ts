import { commandResult, type SlashCommand } from '../assistant/slash-commands.js';
import type { ApprovalDecision, Approvals } from './approvals.js';

/**
 * `/allow [id]`, `/allow always [id]` and `/deny [id]`: answer an approval waiting in this
 * session. Anyone may send them; the registry decides who may answer (the person who started
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
