import fs from 'node:fs';
import { AppError } from '../core/errors.js';
import { formatCliCommand } from '../core/invocation.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { copySqliteToPg } from '../core/store/copy-to-pg.js';
import { acquireGatewayLock } from '../core/store/gateway-lock.js';
import { describeStoreTarget, schemaOfName } from '../core/store/open-store.js';
import { createPgStore } from '../core/store/pg-store.js';
import { createSqliteStore } from '../core/store/sqlite-store.js';
import { loadServiceConfig } from '../definitions.js';
import type { CommandIO } from './io.js';

export interface StoreMigrateOptions {
  dir: string;
  /** postgres://… of the server to copy into. */
  to: string;
  /** The schema on it (default: store.schema, else assistant_<name>). */
  schema?: string;
  json?: boolean;
}

/**
 * `service store migrate --to <url>`: copy the assistant's SQLite state (.service/state.db) into a
 * PostgreSQL schema, in one transaction, into an empty schema only. It holds the directory's
 * gateway lock while it copies, so no gateway writes to the file meanwhile; the file itself is
 * left as it was (going back is removing store.url).
 */
export async function runStoreMigrate(opts: StoreMigrateOptions, io: CommandIO): Promise<number> {
  const paths = resolveAssistantPaths(opts.dir);
  if (!/^postgres(ql)?:\/\/\S+$/.test(opts.to)) throw new AppError('usage', `--to: expected a postgres:// or postgresql:// URL`);
  if (opts.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(opts.schema)) {
    throw new AppError('usage', '--schema: use lower-case letters, digits and underscores (at most 63, not starting with a digit)');
  }
  const { config } = loadServiceConfig(paths.dir);
  if (!fs.existsSync(paths.database)) {
    throw new AppError('no_state', `${paths.database} does not exist: this assistant has no SQLite state to migrate`);
  }
  const usual = config.store.schema ?? schemaOfName(config.name);
  const target = { kind: 'postgres' as const, url: opts.to, schema: opts.schema ?? usual };
  const lock = acquireGatewayLock(paths.stateDir);
  const source = createSqliteStore(paths.database);
  const pg = createPgStore({ url: target.url, schema: target.schema });
  try {
    const counts = await copySqliteToPg(source.db, pg);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    if (opts.json) io.out(JSON.stringify({ ok: true, schema: target.schema, rows: counts }, null, 2));
    else {
      io.out(`Copied ${total} rows into ${describeStoreTarget(target)}:`);
      for (const [table, n] of Object.entries(counts)) if (n > 0) io.out(`  ${table}: ${n}`);
      io.out('');
      const schemaToo = target.schema === usual ? '' : ` and store.schema: ${target.schema}`;
      io.out(
        `Use it: set store.url in service.yaml (a \${VAR} placeholder keeps the password out of the file)${schemaToo}, or SERVICE_STORE_URL; then restart the gateway.`,
      );
      io.out(`${paths.database} is left as it was. \`${formatCliCommand('doctor')}\` checks the connection.`);
    }
    return 0;
  } finally {
    await source.close();
    await pg.close();
    lock.release();
  }
}
