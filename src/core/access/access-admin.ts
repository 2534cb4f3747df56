import type { AccessConfig } from '../config/schema.js';
import type { AccessGrant, AccessKind, AccessStore, PairingRequest } from '../store/types.js';
import { parsePairingCode } from './pairing-code.js';

/**
 * The owner's side of access control, one implementation for every door: `service access`
 * (with or without a running gateway: everything lives in the shared state database), the HTTP
 * API, the dashboard and an admin's `/approve` in a chat. The configured lists come from
 * service.yaml and are only read here; approvals are kept in the store.
 */
export interface AccessEntry {
  /** `<channel>:<id>` as written in service.yaml. */
  id: string;
  /** `config`: listed in service.yaml; `approved`: a pairing approved since. */
  source: 'config' | 'approved';
  label?: string;
  approvedAt?: number;
  approvedBy?: string;
}

export interface PendingPairing extends PairingRequest {
  /** `<channel>:<id>` of the sender or chat that asked. */
  subject: string;
}

export interface AccessListing {
  dm: AccessConfig['dm'];
  groups: AccessConfig['groups'];
  senders: AccessEntry[];
  chats: AccessEntry[];
  admins: string[];
  pending: PendingPairing[];
  rateLimit: AccessConfig['rateLimit'];
  dailyBudgetUsd: number;
}

export type AccessOutcome<T> = { ok: true; value: T; text: string } | { ok: false; reason: 'invalid' | 'not_found' | 'in_config'; text: string };

export interface AccessAdmin {
  list(): Promise<AccessListing>;
  /** `by`: who approves (`cli`, `http`, `chat:<channel>:<id>`), kept with the grant. */
  approve(code: string, by: string): Promise<AccessOutcome<AccessGrant>>;
  deny(code: string): Promise<AccessOutcome<PairingRequest>>;
  /** `<channel>:<id>` of an approved sender or chat. */
  revoke(id: string): Promise<AccessOutcome<AccessGrant[]>>;
}

export interface AccessAdminDeps {
  store: AccessStore;
  /** Read when needed only: approving works even while service.yaml is being fixed. */
  access: () => AccessConfig;
  now?: () => number;
  /** A grant was made here (the check after a non-admin's turn leaves it alone). */
  onGranted?: (grant: AccessGrant) => void;
}

export function createAccessAdmin(deps: AccessAdminDeps): AccessAdmin {
  const now = deps.now ?? Date.now;
  const withCode = async <T>(input: string, act: (code: string) => Promise<T | undefined>): Promise<AccessOutcome<T>> => {
    const code = parsePairingCode(input);
    if (!code) return { ok: false, reason: 'invalid', text: `"${input}" is not a pairing code (8 letters and digits, as the bot sent it).` };
    const value = await act(code);
    if (value === undefined) return { ok: false, reason: 'not_found', text: `No pending pairing has the code ${code} (codes expire after an hour).` };
    return { ok: true, value, text: '' };
  };

  return {
    async list() {
      const cfg = deps.access();
      const [grants, requests] = await Promise.all([deps.store.accessGrants(), deps.store.pairingRequests(now())]);
      const approved = (kind: AccessKind): AccessEntry[] =>
        grants
          .filter((g) => g.kind === kind)
          .map((g) => ({
            id: `${g.channel}:${g.id}`,
            source: 'approved',
            ...(g.label ? { label: g.label } : {}),
            approvedAt: g.approvedAt,
            approvedBy: g.approvedBy,
          }));
      const configured = (ids: string[]): AccessEntry[] => ids.map((id) => ({ id, source: 'config' }));
      return {
        dm: cfg.dm,
        groups: cfg.groups,
        senders: [...configured(cfg.allow), ...approved('sender')],
        chats: [...configured(cfg.chats), ...approved('chat')],
        admins: [...cfg.admins],
        pending: requests.map((r) => ({ ...r, subject: `${r.channel}:${r.id}` })),
        rateLimit: { ...cfg.rateLimit },
        dailyBudgetUsd: cfg.dailyBudgetUsd,
      };
    },
    async approve(input, by) {
      const out = await withCode(input, (code) => deps.store.approvePairing(code, now(), by));
      if (!out.ok) return out;
      const g = out.value;
      deps.onGranted?.(g);
      const who = `${g.channel}:${g.id}${g.label ? ` (${g.label})` : ''}`;
      return {
        ...out,
        text:
          g.kind === 'chat' ? `Approved the group chat ${who}: everyone in it can use the assistant now.` : `Approved ${who}: they can use the assistant now.`,
      };
    },
    async deny(input) {
      const out = await withCode(input, (code) => deps.store.denyPairing(code, now()));
      if (!out.ok) return out;
      return { ...out, text: `Denied the pairing code ${out.value.code} of ${out.value.channel}:${out.value.id}.` };
    },
    async revoke(id) {
      const cut = id.indexOf(':');
      if (cut <= 0 || cut === id.length - 1) return { ok: false, reason: 'invalid', text: `"${id}" is not "<channel>:<id>".` };
      const removed = await deps.store.revokeGrant(id.slice(0, cut), id.slice(cut + 1));
      if (removed.length > 0) return { ok: true, value: removed, text: `Revoked ${id}: its next message is treated as from a stranger.` };
      const cfg = deps.access();
      const listed = (['allow', 'chats', 'admins'] as const).filter((key) => cfg[key].includes(id));
      if (listed.length > 0) {
        return { ok: false, reason: 'in_config', text: `${id} is listed in service.yaml (${listed.map((k) => `access.${k}`).join(', ')}); remove it there.` };
      }
      return { ok: false, reason: 'not_found', text: `${id} is not an approved sender or chat.` };
    },
  };
}
