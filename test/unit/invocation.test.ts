import { describe, expect, it } from 'vitest';
import { checkCommandName, formatShellWord, resolveCliPrefix, type InvocationFacts } from '../../src/core/invocation.js';

const OWN = '/home/me/service/bin/service.js';

/**
 * Facts of a run: `links` maps a path to its real path (symlinks); `onPath(name, PATH)` is the file a
 * bare `name` finds (default: Debian's /usr/sbin/service, and no agent-service).
 */
function facts(over: Partial<InvocationFacts> & { links?: Record<string, string>; onPath?: (name: string, p: string) => string | undefined }): InvocationFacts {
  const links: Record<string, string> = { '/usr/bin/service': OWN, '/usr/bin/agent-service': OWN, '/tmp/npm/bin/service': OWN, ...over.links };
  const onPath = over.onPath ?? ((name: string) => (name === 'service' ? '/usr/sbin/service' : undefined));
  return {
    script: OWN,
    env: { PATH: '/usr/sbin:/usr/bin' },
    ownBin: OWN,
    realpath: (f) => links[f] ?? f,
    resolveCommand: (name, p) => {
      const file = onPath(name, p);
      return file === undefined ? undefined : { file, real: links[file] ?? file };
    },
    ...over,
  };
}

describe('resolveCliPrefix: the form the hints print', () => {
  it('a bare `service` that reaches this CLI → service', () => {
    expect(resolveCliPrefix(facts({ script: '/usr/bin/service', onPath: () => '/usr/bin/service' }))).toBe('service');
  });

  it('Debian: /usr/sbin/service shadows the linked one, agent-service is linked beside it → agent-service, whichever name was typed', () => {
    const onPath = (name: string) => (name === 'service' ? '/usr/sbin/service' : '/usr/bin/agent-service');
    expect(resolveCliPrefix(facts({ script: '/usr/bin/service', onPath }))).toBe('agent-service');
    expect(resolveCliPrefix(facts({ script: '/usr/bin/agent-service', onPath }))).toBe('agent-service');
    expect(resolveCliPrefix(facts({ script: OWN, onPath }))).toBe('agent-service');
  });

  it('Debian, and no agent-service on PATH → the path that was typed, which works from anywhere', () => {
    expect(resolveCliPrefix(facts({ script: '/usr/bin/service' }))).toBe('/usr/bin/service');
    expect(resolveCliPrefix(facts({ script: OWN }))).toBe(OWN);
  });

  it('started by npx / npm exec → npx service, even though npx put a node_modules/.bin with `service` on PATH', () => {
    const env = { PATH: '/tmp/npx/node_modules/.bin:/usr/sbin', npm_command: 'exec', npm_lifecycle_event: 'npx' };
    expect(resolveCliPrefix(facts({ script: '/tmp/npm/bin/service', env, onPath: () => '/tmp/npm/bin/service' }))).toBe('npx service');
    expect(resolveCliPrefix(facts({ script: '/tmp/npm/bin/agent-service', env, links: { '/tmp/npm/bin/agent-service': OWN } }))).toBe('npx agent-service');
  });

  it("under npm run-script, npm's own node_modules/.bin entries are not the user's PATH", () => {
    const seen: string[] = [];
    const env = {
      PATH: '/repo/node_modules/.bin:/usr/lib/node_modules/npm/node_modules/@npmcli/run-script/lib/node-gyp-bin:/usr/sbin',
      npm_lifecycle_event: 'start',
    };
    resolveCliPrefix(facts({ env, onPath: (_name, p) => (seen.push(p), undefined) }));
    expect(new Set(seen)).toEqual(new Set(['/usr/sbin']));
  });

  it('a program embedding the library (argv[1] is not this CLI) → the documented name', () => {
    expect(resolveCliPrefix(facts({ script: '/home/me/app/server.js' }))).toBe('service');
    expect(resolveCliPrefix(facts({ script: undefined }))).toBe('service');
  });

  it('a path with spaces is quoted for the shell', () => {
    const spaced = '/home/me/my tools/service/bin/service.js';
    expect(resolveCliPrefix(facts({ script: spaced, ownBin: spaced }))).toBe(`'${spaced}'`);
    expect(formatShellWord("it's")).toBe(`'it'\\''s'`);
    expect(formatShellWord('my-bot')).toBe('my-bot');
  });
});

describe("checkCommandName: what a bare `service` runs in the user's shell", () => {
  const root = '/home/me/service';
  const check = (onPath: (name: string, p: string) => string | undefined, env: NodeJS.ProcessEnv = { PATH: '/usr/sbin:/usr/bin' }) => {
    const { script: _script, ...rest } = facts({ onPath, env });
    return checkCommandName({ ...rest, packageRoot: root });
  };

  it('this CLI → ok', () => {
    expect(check(() => '/usr/bin/service')).toEqual({ ok: true, detail: '`service` on PATH is this CLI (/usr/bin/service)' });
  });

  it('the system tool first, agent-service linked (both names in /usr/bin) → type agent-service, or reorder PATH', () => {
    const r = check((name, p) => (name === 'service' ? (p === '/usr/bin' ? '/usr/bin/service' : '/usr/sbin/service') : '/usr/bin/agent-service'));
    expect(r.ok).toBe(false);
    expect(r.detail).toBe(
      '`service` on PATH is /usr/sbin/service, another program (on Debian and Ubuntu, the init-script tool); `agent-service` (/usr/bin/agent-service) is this CLI',
    );
    expect(r.fix).toBe('type `agent-service` wherever the docs say `service`, or put /usr/bin first in PATH: export PATH="/usr/bin:$PATH"');
  });

  it('the system tool, nothing linked → npm link in the package, then agent-service', () => {
    const r = check((name) => (name === 'service' ? '/usr/sbin/service' : undefined));
    expect(r).toMatchObject({ ok: false, detail: expect.stringContaining('and this CLI is not on PATH') });
    expect(r.fix).toBe('run `npm link` in /home/me/service (it puts `service` and `agent-service` in $(npm prefix -g)/bin), then type `agent-service`');
  });

  it('nothing called service, nothing linked → npm link; agent-service alone → ok', () => {
    expect(check(() => undefined)).toMatchObject({ ok: false, detail: 'this CLI is not on PATH as `service` or `agent-service`' });
    expect(check((name) => (name === 'agent-service' ? '/usr/bin/agent-service' : undefined)).ok).toBe(true);
  });

  it("under npm start, the node_modules/.bin npm adds is not the user's PATH", () => {
    const seen: string[] = [];
    check((_name, p) => (seen.push(p), undefined), { PATH: '/repo/node_modules/.bin:/usr/sbin', npm_lifecycle_event: 'start' });
    expect(new Set(seen)).toEqual(new Set(['/usr/sbin']));
  });
});
