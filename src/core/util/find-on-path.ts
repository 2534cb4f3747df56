import fs from 'node:fs';
import path from 'node:path';

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
