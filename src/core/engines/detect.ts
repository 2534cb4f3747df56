import fs from 'node:fs';
import path from 'node:path';
import type { ServiceConfig } from '../config/schema.js';
import { formatCliCommand, formatShellWord } from '../invocation.js';
import { packageRoot } from '../paths.js';
import { findOnPath } from '../util/find-on-path.js';
import type { EngineDefinition } from './types.js';

/**
 * The engine's executable, if installed: the program its own config block names (a path,
 * relative ones against the assistant directory, or a name on PATH) or else the first of its
 * binaries on PATH.
 */
export function findEngineBinary(def: EngineDefinition, envPath?: string, configured?: { config: ServiceConfig; dir: string }): string | undefined {
  const named = configured && def.configuredBinary?.(configured.config);
  if (named === undefined || named === '') return findOnPath(def.binaries, envPath);
  if (!named.includes('/')) return findOnPath([named], envPath);
  const file = path.resolve(configured?.dir ?? '.', named);
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The CLIs this package bundles: its own node_modules/.bin. A checkout's `npm install` puts the
 * engine CLIs there (they are devDependencies); npm scripts (`npm start`) and npx add the folder
 * to PATH, a user's shell does not.
 */
export function bundledBinDir(): string {
  return path.join(packageRoot(), 'node_modules', '.bin');
}

/** Where a turn finds the engine's program, or why it cannot, with the fix. */
export type EngineLocation =
  | {
      found: true;
      binary: string;
      /** The package's bundled copy, on PATH only because npm or npx put it there. */
      bundled: boolean;
    }
  | {
      found: false;
      /** The engine, as messages name it: "engine_b (Claude Code)". */
      engine: string;
      /** "claude is not on PATH; …" */
      problem: string;
      fix: string;
      /** The package's bundled copy, which a shell's PATH lacks. */
      bundled?: string;
    };

/** Find the engine's program as a turn does (on `envPath`), and say where it comes from or how to get it. */
export function locateEngine(def: EngineDefinition, envPath: string | undefined, configured?: { config: ServiceConfig; dir: string }): EngineLocation {
  const binary = findEngineBinary(def, envPath, configured);
  if (binary) return { found: true, binary, bundled: sameFolder(path.dirname(binary), bundledBinDir()) };
  const who = `${def.id} (${def.title})`;
  const named = configured && def.configuredBinary?.(configured.config);
  if (named) {
    return {
      found: false,
      engine: who,
      problem: `the configured program ${named} is not installed, not executable or not on PATH`,
      fix: `install ${named} or set ${def.options?.key}.command in service.yaml`,
    };
  }
  const bundled = findOnPath(def.binaries, bundledBinDir());
  if (bundled) {
    const version = bundledVersion(def);
    return {
      found: false,
      engine: who,
      bundled,
      problem: `${path.basename(bundled)} is not on PATH; this package bundles it (${bundled}${version ? `, ${version}` : ''}), which npm scripts such as \`npm start\` put on PATH and a shell does not`,
      fix: formatBundledFix(def),
    };
  }
  return { found: false, engine: who, problem: `${def.binaries.join(' / ')} not found on PATH`, fix: globalInstall(def) };
}

/** How to reach the copy this package bundles from a shell: the PATH line, or a global install of the same version. */
export function formatBundledFix(def: EngineDefinition): string {
  const version = bundledVersion(def);
  return `for this shell: export PATH="${bundledBinDir()}:$PATH"; for every shell: ${globalInstall(def)}${version && def.npmPackage ? `@${version}` : ''}`;
}

/** One line for a missing engine, as a turn's error, the gateway's start warning and /api/status say it. */
export function describeMissingEngine(missing: { engine: string; problem: string; fix: string }): string {
  return `${missing.engine}: ${missing.problem} (fix: ${missing.fix})`;
}

/**
 * Which program the engine runs and where it comes from, for `npm start` to print: a copy this
 * package bundles is on PATH there only because npm put it there, which a shell does not; `dir`
 * (the assistant directory) goes into the doctor command it names, so the line can be pasted anywhere.
 */
export function describeEngineSource(def: EngineDefinition, location: EngineLocation, dir?: string): string {
  if (!location.found) return describeMissingEngine(location);
  const doctor = formatCliCommand(dir === undefined ? 'doctor' : `doctor -d ${formatShellWord(dir)}`);
  const bundled = location.bundled
    ? `: the copy this package bundles, which npm scripts put on PATH and a shell does not (\`${doctor}\` in a shell says how to reach it there)`
    : '';
  return `engine ${def.id} (${def.title}): ${location.binary}${bundled}`;
}

// --- internal ---

function globalInstall(def: EngineDefinition): string {
  return def.npmPackage ? `npm install -g ${def.npmPackage}` : "install it with the vendor's installer";
}

function sameFolder(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  return real(a) === real(b);
}

/** The version of the engine's npm package in the package's own node_modules, when it is there. */
function bundledVersion(def: EngineDefinition): string | undefined {
  if (!def.npmPackage) return undefined;
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'node_modules', def.npmPackage, 'package.json'), 'utf8')) as { version?: unknown };
    return typeof manifest.version === 'string' ? manifest.version : undefined;
  } catch {
    return undefined;
  }
}
