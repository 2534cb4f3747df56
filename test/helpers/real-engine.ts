import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServiceConfig } from '../../src/core/config/schema.js';
import { createEngineRunner, type EngineRunner, type EngineTurnRequest } from '../../src/core/engines/engine-runner.js';
import { createMemoryFailoverStore } from '../../src/core/engines/failover.js';
import type { AgentEvent } from '../../src/core/events.js';
import { createSilentLogger } from '../../src/core/logger.js';
import { loadServiceConfig } from '../../src/definitions.js';
import { repoRoot } from './cli.js';

/**
 * What the end-to-end tests of the real engine CLIs share: a throwaway root holding the assistant
 * directory and a HOME of its own, the environment the CLIs run in, and the seeding that keeps
 * OpenCode and Codex on 127.0.0.1.
 */
export interface RealEngineRoot {
  root: string;
  /** The assistant directory (`<root>/assistant`), with service.yaml written. */
  dir: string;
  home: string;
  env: NodeJS.ProcessEnv;
  /** The file the scripted LLM's asking command writes (FAKE_ASKING_COMMAND), in the workspace. */
  written: string;
  remove(): void;
}

/** service.yaml lines routing the engine to the scripted LLM at `baseUrl`. */
export function fakeProviderYaml(baseUrl: string): string[] {
  return ['provider:', `  baseUrl: ${baseUrl}`, '  apiKey: fake-key', '  model: fake-model'];
}

/** `yaml`: the lines of service.yaml. */
export function createRealEngineRoot(prefix: string, yaml: readonly string[]): RealEngineRoot {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const dir = path.join(root, 'assistant');
  const home = path.join(root, 'home');
  fs.mkdirSync(dir);
  fs.mkdirSync(home);
  fs.writeFileSync(path.join(dir, 'service.yaml'), `${yaml.join('\n')}\n`);
  return {
    root,
    dir,
    home,
    env: realEngineEnv(home),
    written: path.join(dir, 'FAKE-WRITTEN.txt'),
    remove: () => fs.rmSync(root, { recursive: true, force: true }),
  };
}

/** The pinned CLIs first; this Node (the codex launcher, our helpers); the system's shell tools. Loopback is never proxied. */
export function realEngineEnv(home: string, bin = path.join(repoRoot, 'node_modules', '.bin')): NodeJS.ProcessEnv {
  return {
    HOME: home,
    PATH: [bin, path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter),
    NO_PROXY: '127.0.0.1',
    no_proxy: '127.0.0.1',
    LANG: 'C.UTF-8',
  };
}

/**
 * OpenCode starts a background `npm install @opencode-ai/plugin` into every config folder it loads
 * ($HOME/.config/opencode and each .opencode/ between cwd and the worktree) on every run. No env flag
 * turns it off in 1.18.33 (OPENCODE_PURE and OPENCODE_DISABLE_DEFAULT_PLUGINS do not): its Npm.install
 * returns early when the folder has node_modules/ and a package-lock.json whose root lists every wanted
 * package. A folder seeded like this makes OpenCode stay on 127.0.0.1 (checked with strace).
 */
export function seedOpenCodeDeps(dir: string): void {
  const deps = { '@opencode-ai/plugin': '*' };
  fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ dependencies: deps }));
  fs.writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages: { '': { dependencies: deps } } }));
}

/** An engine runner on the real CLIs for `root`'s assistant; `run` collects one turn's events (config read from service.yaml, then `overrides`). */
export function createRealEngineRunner(root: RealEngineRoot): {
  runner: EngineRunner;
  run(req: Partial<EngineTurnRequest> & { prompt: string }, overrides?: Partial<ServiceConfig>): Promise<AgentEvent[]>;
} {
  const runner = createEngineRunner({
    dir: root.dir,
    stateDir: path.join(root.dir, '.service'),
    skillsDir: path.join(root.dir, 'skills'),
    log: createSilentLogger(),
    failover: createMemoryFailoverStore(),
    env: root.env,
  });
  return {
    runner,
    async run(req, overrides = {}) {
      const events: AgentEvent[] = [];
      for await (const e of runner.run({ config: { ...loadServiceConfig(root.dir, {}).config, ...overrides }, ...req })) events.push(e);
      return events;
    },
  };
}
