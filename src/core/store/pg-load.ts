import { createRequire } from 'node:module';
import type pg from 'pg';

/**
 * The `pg` driver, loaded on first use. A gateway on the SQLite store never opens a pool, and
 * loading the driver costs it about 7 MB resident for nothing (pg and its type parsers, plus the
 * fetch implementation its runtime check pulls in). pg is CommonJS, so a synchronous require
 * keeps every caller synchronous.
 */
const requireFromHere = createRequire(import.meta.url);
let loaded: typeof pg | undefined;

export function loadPg(): typeof pg {
  loaded ??= requireFromHere('pg') as typeof pg;
  return loaded;
}
