import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderAssistantContext } from '../../../src/core/engines/context.js';
import { templatesDir } from '../../../src/core/paths.js';
import type { ServiceConfig } from '../../../src/core/config/schema.js';

describe('multi-bot skill and the assistant context', () => {
  it("the skill's example is exactly the section the context renders for those peers", () => {
    const skill = fs.readFileSync(path.join(templatesDir(), 'skills', 'multi-bot', 'SKILL.md'), 'utf8');
    const example = /```\n(## Peer assistants\n[\s\S]*?)```/.exec(skill)?.[1];
    expect(example).toBeDefined();
    const peers = [...(example ?? '').matchAll(/^- (\S+) \((.+)\): (\S+) on (\S+)$/gm)].map(([, name, role, url, host]) => ({
      name: name ?? '',
      role: role ?? '',
      url: url ?? '',
      host: host ?? '',
    }));
    expect(peers).toHaveLength(2);
    const context = renderAssistantContext({ config: { name: 'me' } as ServiceConfig, skills: [], skillPath: () => '', peers });
    expect(context.slice(context.indexOf('## Peer assistants'))).toBe(example);
  });

  it('a peer without a role is `- name: url`, and no peers means no section', () => {
    const base = { config: { name: 'me' } as ServiceConfig, skills: [], skillPath: () => '' };
    expect(renderAssistantContext({ ...base, peers: [{ name: 'plain', url: 'http://127.0.0.1:1' }] })).toContain('\n- plain: http://127.0.0.1:1\n');
    expect(renderAssistantContext({ ...base, peers: [{ name: 'far', url: 'http://h2:1', host: 'h2' }] })).toContain('\n- far: http://h2:1 on h2\n');
    expect(renderAssistantContext({ ...base, peers: [] })).not.toContain('Peer assistants');
  });
});
