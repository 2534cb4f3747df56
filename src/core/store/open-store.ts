import type { ServiceConfig } from '../config/schema.js';
import { createPgStore } from './pg-store.js';
import { formatSafeUrl } from '../config/secrets.js';
import { createSqliteStore } from './sqlite-store.js';
import type { Store } from './types.js';

/**
 * Which store an assistant uses: `SERVICE_STORE_URL`, else `store.url` in service.yaml, names a
 * PostgreSQL server; without either, the embedded SQLite file `.service/state.db`. On a server
 * each assistant keeps its tables in a schema of its own, `store.schema` or `assistant_<name>`:
 * one database can hold a team's assistants, and two copies of one assistant (same name, same
 * URL) share their state, which is what running one assistant on two hosts needs.
 */
export type StoreTarget = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; schema: string };

export function resolveStoreTarget(
  config: Pick<ServiceConfig, 'name'> & { store: Pick<ServiceConfig['store'], 'url' | 'schema'> },
  env: NodeJS.ProcessEnv,
  sqliteFile: string,
): StoreTarget {
  const url = env.SERVICE_STORE_URL?.trim() || config.store.url;
  if (!url) return { kind: 'sqlite', file: sqliteFile };
  return { kind: 'postgres', url, schema: config.store.schema ?? schemaOfName(config.name) };
}

/** Open the store (a server store connects and migrates in the background: await `ready()` to know it works). */
export function openStore(target: StoreTarget, opts: { onIdleError?: (err: Error) => void; origin?: string } = {}): Store {
  return target.kind === 'sqlite'
    ? createSqliteStore(target.file)
    : createPgStore({
        url: target.url,
        schema: target.schema,
        ...(opts.onIdleError ? { onIdleError: opts.onIdleError } : {}),
        ...(opts.origin ? { origin: opts.origin } : {}),
      });
}

/** For messages: where the state is, never with a password. */
export function describeStoreTarget(target: StoreTarget): string {
  return target.kind === 'sqlite' ? target.file : `${formatSafeUrl(target.url)} (schema ${target.schema})`;
}

/** `assistant_` and the name in lower case with every run of other characters as one `_`, within PostgreSQL's 63 bytes. */
export function schemaOfName(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return `assistant_${slug || 'default'}`.slice(0, 63);
}
