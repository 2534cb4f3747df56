import fs from 'node:fs';
import path from 'node:path';
import type { ServiceConfig } from '../config/schema.js';
import type { EngineDefinition } from './types.js';

/** First executable of `names` on PATH, as an absolute path. */
export function findOnPath(names: readonly string[], envPath = process.env.PATH ?? ''): string | undefined {
  const dirs = envPath.split(path.delimiter).filter(Boolean);
  for (const name of names) {
    for (const dir of dirs) {
      const candidate = path.join(dir, name);
      // Looked up before every turn: the directories without it are passed without an exception each.
      try {
        if (!fs.statSync(candidate, { throwIfNoEntry: false })?.isFile()) continue;
        fs.accessSync(candidate, fs.constants.X_OK);
        return candidate;
      } catch {
        // not executable, or a PATH entry that is no folder
      }
    }
  }
  return undefined;
}

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
