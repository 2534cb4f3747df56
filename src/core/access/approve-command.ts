import { commandResult, type SlashCommand } from '../commands/command-table.js';
import type { AccessAdmin } from './access-admin.js';

/**
 * `/approve <CODE>`: approve a pairing from a chat. It changes who may use the assistant, so the
 * command table lets only admins (`access.admins`) run it from a chat; the terminal and the HTTP
 * API may too. Without a code it lists the pending ones.
 */
export function createApproveCommand(access: AccessAdmin): SlashCommand {
  return {
    name: 'approve',
    usage: '/approve <code>',
    help: 'approve a pairing code (admins, from a chat)',
    changesConfig: () => true,
    run: async ([code], call) => {
      if (!code) {
        const { pending } = await access.list();
        if (pending.length === 0) return commandResult('No pairing codes are waiting.', { pending: [] });
        const rows = pending.map((p) => `  ${p.code}  ${p.kind === 'chat' ? 'group' : 'sender'} ${p.subject}${p.label ? ` (${p.label})` : ''}`);
        return commandResult(`Waiting for approval:\n${rows.join('\n')}\nApprove one with /approve <code>.`, { pending: pending.map((p) => p.code) });
      }
      const out = await access.approve(code, call.caller ? `chat:${call.caller}` : 'command');
      return out.ok
        ? commandResult(out.text, { approved: `${out.value.channel}:${out.value.id}` })
        : commandResult(out.text, { error: `pairing_${out.reason}` });
    },
  };
}
