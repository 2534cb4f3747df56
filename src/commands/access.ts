import fs from 'node:fs';
import { type AccessAdmin, type AccessEntry, type AccessListing, createAccessAdmin } from '../core/access/access-admin.js';
import { readBudget } from '../core/access/budget.js';
import { AppError } from '../core/errors.js';
import { formatCliCommand } from '../core/invocation.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { openStore, resolveStoreTarget } from '../core/store/open-store.js';
import { loadServiceConfig } from '../definitions.js';
import type { CommandIO } from './io.js';
import { escapeControl, escapeJsonForTerminal } from '../core/util/escape-text.js';
import { formatTable } from '../core/util/text-table.js';

export interface AccessOptions {
  action: 'list' | 'approve' | 'deny' | 'revoke';
  /** The pairing code (approve, deny) or `<channel>:<id>` (revoke). */
  arg?: string;
  dir: string;
  json?: boolean;
}

/**
 * `service access list|approve|deny|revoke`. Works with or without a running gateway: pairings
 * and approvals live in the assistant's state database, which the gateway reads per message, so
 * an approval applies to the sender's next message without a restart. service.yaml is only read
 * (for `list` and to explain a `revoke` of a configured entry).
 */
export async function runAccess(opts: AccessOptions, io: CommandIO): Promise<number> {
  const paths = resolveAssistantPaths(opts.dir);
  if (!fs.existsSync(paths.configFile)) {
    throw new AppError('no_assistant', `${paths.configFile} does not exist`, { hint: `run \`${formatCliCommand('init')}\` or pass -d <assistant directory>` });
  }
  const config = () => loadServiceConfig(paths.dir).config;
  const store = openStore(resolveStoreTarget(config(), process.env, paths.database));
  try {
    const admin = createAccessAdmin({ store, access: () => config().access });
    if (opts.action === 'list') {
      const listing = await admin.list();
      const budget = await readBudget(store, listing.dailyBudgetUsd, Date.now());
      // Names and ids come from chats (a stranger picks their display name): shown escaped.
      if (opts.json) io.out(escapeJsonForTerminal(JSON.stringify({ ...listing, todayCostUsd: budget.todayCostUsd }, null, 2)));
      else io.out(formatListing(listing, budget.todayCostUsd).join('\n'));
      return 0;
    }
    return await act(admin, opts, io);
  } finally {
    await store.close();
  }
}

// --- internal ---

async function act(admin: AccessAdmin, opts: AccessOptions, io: CommandIO): Promise<number> {
  const arg = opts.arg ?? '';
  const out = await (opts.action === 'approve' ? admin.approve(arg, 'cli') : opts.action === 'deny' ? admin.deny(arg) : admin.revoke(arg));
  if (!out.ok) {
    throw new AppError(
      `access_${out.reason}`,
      escapeControl(out.text),
      out.reason === 'not_found' ? { hint: `\`${formatCliCommand('access list')}\` shows what there is` } : {},
    );
  }
  io.out(opts.json ? escapeJsonForTerminal(JSON.stringify({ ok: true, text: out.text })) : escapeControl(out.text));
  return 0;
}

function formatListing(l: AccessListing, todayCostUsd: number): string[] {
  const entries = (rows: AccessEntry[]) =>
    rows.length === 0
      ? ['  (none)']
      : formatTable(
          ['ID', 'FROM', 'NAME', 'APPROVED'],
          rows.map((e) => [
            escapeControl(e.id),
            e.source === 'config' ? 'service.yaml' : 'pairing',
            escapeControl(e.label ?? ''),
            e.approvedAt ? `${formatTime(e.approvedAt)} by ${escapeControl(e.approvedBy ?? '')}` : '',
          ]),
        ).map((line) => `  ${line}`.trimEnd());
  const pending =
    l.pending.length === 0
      ? ['  (none)']
      : formatTable(
          ['CODE', 'FOR', 'NAME', 'AGE'],
          l.pending.map((p) => [
            p.code,
            `${p.kind === 'chat' ? 'group' : 'sender'} ${escapeControl(p.subject)}`,
            escapeControl(p.label ?? ''),
            formatAge(Date.now() - p.createdAt),
          ]),
        ).map((line) => `  ${line}`.trimEnd());
  const rate = l.rateLimit.messages > 0 ? `${l.rateLimit.messages} messages per ${l.rateLimit.perSeconds} s per sender` : 'none';
  const budget = l.dailyBudgetUsd > 0 ? `$${l.dailyBudgetUsd.toFixed(2)} a day` : 'none';
  return [
    `Direct messages: ${l.dm}    Groups: ${l.groups}`,
    `Rate limit: ${rate}    Daily budget: ${budget} (spent today: $${todayCostUsd.toFixed(2)})`,
    '',
    'Allowed senders',
    ...entries(l.senders),
    'Allowed group chats',
    ...entries(l.chats),
    'Admins',
    ...(l.admins.length === 0 ? ['  (none)'] : l.admins.map((a) => `  ${escapeControl(a)}`)),
    'Pending pairing codes (valid for 1 hour)',
    ...pending,
    ...(l.pending.length > 0 ? ['', `Approve one with: ${formatCliCommand('access approve <CODE>')}`] : []),
  ];
}

function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min`;
}

/** Local time, to the minute: what the owner's clock said. */
function formatTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}
