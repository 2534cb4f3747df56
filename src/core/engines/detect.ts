import fs from 'node:fs';
import path from 'node:path';
import type { EngineDefinition } from './types.js';

/** First executable of `names` on PATH, as an absolute path. */
export function findOnPath(names: readonly string[], envPath = process.env.PATH ?? ''): string | undefined {
  const dirs = envPath.split(path.delimiter).filter(Boolean);
  for (const name of names) {
    for (const dir of dirs) {
      const candidate = path.join(dir, name);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        if (fs.statSync(candidate).isFile()) return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** The engine's executable on PATH, if installed. */
export function findEngineBinary(def: EngineDefinition, envPath?: string): string | undefined {
  return findOnPath(def.binaries, envPath);
}
