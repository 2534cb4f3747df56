import { describe, expect, it } from 'vitest';
import { formatShellWord, resolveCliPrefix, type InvocationFacts } from '../../src/core/invocation.js';

const OWN = '/home/me/service/bin/service.js';

/** Facts of a run: `links` maps a path to its real path (symlinks), `onPath` what a bare `service` finds per PATH. */
function facts(over: Partial<InvocationFacts> & { links?: Record<string, string>; onPath?: (p: string) => string | undefined }): InvocationFacts {
  const links: Record<string, string> = { '/usr/bin/service': OWN, '/tmp/npm/bin/service': OWN, ...over.links };
  return {
    script: OWN,
    env: { PATH: '/usr/sbin:/usr/bin' },
    ownBin: OWN,
    realpath: (f) => links[f] ?? f,
    resolveService: over.onPath ?? (() => '/usr/sbin/service'),
    ...over,
  };
}

describe('resolveCliPrefix: the form the hints print', () => {
  it('a bare `service` that reaches this CLI → service', () => {
    expect(resolveCliPrefix(facts({ script: '/usr/bin/service', onPath: () => OWN }))).toBe('service');
  });

  it('Debian: /usr/sbin/service shadows the linked one → the path that was typed, which works from anywhere', () => {
    expect(resolveCliPrefix(facts({ script: '/usr/bin/service' }))).toBe('/usr/bin/service');
    expect(resolveCliPrefix(facts({ script: OWN }))).toBe(OWN);
  });

  it('started by npx / npm exec → npx service, even though npx put a node_modules/.bin with `service` on PATH', () => {
    const env = { PATH: '/tmp/npx/node_modules/.bin:/usr/sbin', npm_command: 'exec', npm_lifecycle_event: 'npx' };
    expect(resolveCliPrefix(facts({ script: '/tmp/npm/bin/service', env, onPath: () => OWN }))).toBe('npx service');
  });

  it("under npm run-script, npm's own node_modules/.bin entries are not the user's PATH", () => {
    const seen: string[] = [];
    const env = {
      PATH: '/repo/node_modules/.bin:/usr/lib/node_modules/npm/node_modules/@npmcli/run-script/lib/node-gyp-bin:/usr/sbin',
      npm_lifecycle_event: 'start',
    };
    resolveCliPrefix(facts({ env, onPath: (p) => (seen.push(p), undefined) }));
    expect(seen).toEqual(['/usr/sbin']);
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
