import type { ServiceConfig } from '../config/schema.js';
import { escapeControl } from '../util/escape-text.js';
import type { Skill } from '../skills/skills.js';

/** A running peer assistant from the fleet (this machine's folder, and the database with a PostgreSQL store). */
export interface PeerAssistant {
  name: string;
  role?: string;
  url: string;
  /** The machine it runs on. */
  host?: string;
}

export interface ContextInput {
  config: ServiceConfig;
  skills: readonly Skill[];
  /** Path of each skill as the engine should read it (relative to the assistant directory). */
  skillPath: (skill: Skill) => string;
  peers?: readonly PeerAssistant[];
}

/**
 * The assistant context every engine reads before a turn: identity (persona), the system
 * instructions (rendered once here, never prepended to messages), the installed skills with their
 * paths, and the peer assistants in the fleet.
 */
export function renderAssistantContext(input: ContextInput): string {
  const { config } = input;
  const persona = config.persona;
  const lines: string[] = [`# Assistant: ${persona?.displayName ?? config.name}`, ''];
  lines.push(
    'You are an assistant served by `service`: your replies go to people through a chat API, a terminal or instant-messaging apps.',
    'This directory is your workspace. Do not edit `service.yaml` or anything under `.service/` (except your outbox, below).',
    '',
    '## Files',
    '',
    'Files people send you are saved under `inbox/` and listed at the end of their message. To send files back with your reply, save them in the folder named by the environment variable `SERVICE_OUTBOX` (a new one each turn); see the file-transfer skill.',
    '',
  );
  if (persona && (persona.role || persona.tone || persona.boundaries?.length)) {
    lines.push('## Identity', '');
    lines.push(`- Name: ${persona.displayName ?? config.name}`);
    if (persona.role) lines.push(`- Role: ${persona.role}`);
    if (persona.tone) lines.push(`- Tone: ${persona.tone}`);
    if (persona.boundaries?.length) {
      lines.push('- Boundaries:');
      for (const b of persona.boundaries) lines.push(`  - ${b}`);
    }
    lines.push('');
  }
  if (config.systemPrompt?.trim()) {
    lines.push('## System Instructions', '', config.systemPrompt.trim(), '');
  }
  lines.push('## Skills', '');
  if (input.skills.length === 0) lines.push('No skills are installed.', '');
  else {
    lines.push('Each skill is a folder with a SKILL.md; read it before doing what it covers.', '');
    for (const s of input.skills) lines.push(`- **${s.name}** (\`${input.skillPath(s)}/SKILL.md\`): ${s.description}`);
    lines.push('');
  }
  if (input.peers && input.peers.length > 0) {
    lines.push('## Peer assistants', '', 'Other running assistants and the host each runs on (see the multi-bot skill):', '');
    for (const p of input.peers) {
      const [name, role, url, host] = [p.name, p.role, p.url, p.host].map((v) => (v === undefined ? undefined : formatPeerValue(v)));
      lines.push(`- ${name}${role ? ` (${role})` : ''}: ${url}${host ? ` on ${host}` : ''}`);
    }
    lines.push('');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

/** Longest peer value written (a role is a phrase, not a document). */
const PEER_VALUE_MAX = 200;

/**
 * A peer's value (written by another assistant's owner, or by anyone who can write the shared
 * fleet) as one inert line: line breaks and other control, invisible and direction-changing
 * characters as escapes, `<` and `>` as entities (no HTML comment, so no section marker), cut
 * at PEER_VALUE_MAX characters.
 */
export function formatPeerValue(value: string): string {
  const line = escapeControl(value).replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return line.length > PEER_VALUE_MAX ? `${line.slice(0, PEER_VALUE_MAX - 1)}…` : line;
}
