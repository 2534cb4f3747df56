import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { formatSafeUrl } from '../core/config/secrets.js';
import { AppError } from '../core/errors.js';
import { formatCliCommand } from '../core/invocation.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { copySqliteToPg } from '../core/store/copy-to-pg.js';
import { acquireGatewayLock } from '../core/store/gateway-lock.js';
import { describeStoreTarget, schemaOfName } from '../core/store/open-store.js';
import { createPgStore } from '../core/store/pg-store.js';
import { type AssistantRole, applyAssistantRole, formatRoleScript, formatRoleUrl } from '../core/store/pg-roles.js';
import { createSqliteStore } from '../core/store/sqlite-store.js';
import { loadServiceConfig } from '../definitions.js';
import type { CommandIO } from './io.js';

export interface StoreMigrateOptions {
  dir: string;
  /** postgres://… of the server to copy into (an admin's, with --role or --print-sql). */
  to: string;
  /** The schema on it (default: store.schema, else assistant_<name>). */
  schema?: string;
  /** Give the assistant a database role of its own (named so; `true`: named as the schema). */
  role?: string | boolean;
  /** Print the SQL that makes the role, and do nothing else. */
  printSql?: boolean;
  json?: boolean;
}

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * `service store migrate --to <url>`: copy the assistant's SQLite state (.service/state.db) into a
 * PostgreSQL schema, in one transaction, into an empty schema only. It holds the directory's
 * gateway lock while it copies, so no gateway writes to the file meanwhile; the file itself is
 * left as it was (going back is removing store.url). With `--role`, the assistant then gets a
 * database role of its own that owns its schema and nothing else (pg-roles.ts); `--print-sql`
 * prints that SQL for a database administrator instead of running anything.
 */
export async function runStoreMigrate(opts: StoreMigrateOptions, io: CommandIO): Promise<number> {
  const paths = resolveAssistantPaths(opts.dir);
  if (!/^postgres(ql)?:\/\/\S+$/.test(opts.to)) throw new AppError('usage', `--to: expected a postgres:// or postgresql:// URL`);
  if (opts.schema !== undefined && !IDENT.test(opts.schema)) {
    throw new AppError('usage', '--schema: use lower-case letters, digits and underscores (at most 63, not starting with a digit)');
  }
  const { config } = loadServiceConfig(paths.dir);
  const usual = config.store.schema ?? schemaOfName(config.name);
  const target = { kind: 'postgres' as const, url: opts.to, schema: opts.schema ?? usual };
  const role = opts.role || opts.printSql ? planRole(opts, target.schema) : undefined;
  if (opts.printSql && role) {
    io.out(formatRoleScript(role));
    return 0;
  }
  const hasState = fs.existsSync(paths.database);
  if (!hasState && !role) throw new AppError('no_state', `${paths.database} does not exist: this assistant has no SQLite state to migrate`);
  const counts = hasState ? await copyState(paths, target) : undefined;
  // After the copy: the role takes over the schema with what was just copied into it.
  const made = role ? await applyAssistantRole(opts.to, role) : undefined;
  const roleUrl = role && made ? formatRoleUrl(opts.to, role.role, made.created ? role.password : undefined) : undefined;
  if (opts.json) {
    io.out(
      JSON.stringify(
        {
          ok: true,
          schema: target.schema,
          ...(counts ? { rows: counts } : {}),
          ...(role && made ? { role: role.role, created: made.created, url: roleUrl } : {}),
        },
        null,
        2,
      ),
    );
    return 0;
  }
  if (counts) {
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    io.out(`Copied ${total} rows into ${describeStoreTarget(target)}:`);
    for (const [table, n] of Object.entries(counts)) if (n > 0) io.out(`  ${table}: ${n}`);
    io.out('');
  }
  const schemaToo = target.schema === usual ? '' : ` and store.schema: ${target.schema}`;
  if (role && made && roleUrl) {
    io.out(`Role ${role.role} owns schema ${target.schema} and may use the shared fleet table; it cannot read or write any other assistant's schema.`);
    io.out(
      made.created
        ? `Its password is generated and shown this once: store.url for this assistant is\n  ${roleUrl}\nKeep it in a variable (store.url: \${ASSISTANT_DB_URL})${schemaToo}, or SERVICE_STORE_URL; then restart the gateway.`
        : `The role existed: its password is unchanged. store.url for this assistant is ${formatSafeUrl(roleUrl)} with its password${schemaToo}.`,
    );
  } else {
    io.out(
      `Use it: set store.url in service.yaml (a \${VAR} placeholder keeps the password out of the file)${schemaToo}, or SERVICE_STORE_URL; then restart the gateway.`,
    );
    io.out(`Assistants sharing the database are kept apart only by a role each: \`${formatCliCommand('store migrate --to <admin url> --role')}\`.`);
  }
  if (hasState) io.out(`${paths.database} is left as it was. \`${formatCliCommand('doctor')}\` checks the connection.`);
  return 0;
}

// --- internal ---

function planRole(opts: StoreMigrateOptions, schema: string): AssistantRole {
  const name = typeof opts.role === 'string' ? opts.role : schema;
  if (!IDENT.test(name)) throw new AppError('usage', '--role: use lower-case letters, digits and underscores (at most 63, not starting with a digit)');
  const database = decodeURIComponent(new URL(opts.to).pathname.slice(1));
  if (!database) throw new AppError('usage', '--to: name the database in the URL (postgres://admin@host:5432/<database>)');
  return { role: name, schema, database, password: randomBytes(18).toString('base64url') };
}

async function copyState(paths: ReturnType<typeof resolveAssistantPaths>, target: { url: string; schema: string }): Promise<Record<string, number>> {
  const lock = acquireGatewayLock(paths.stateDir);
  const source = createSqliteStore(paths.database);
  const pg = createPgStore({ url: target.url, schema: target.schema });
  try {
    return await copySqliteToPg(source.db, pg);
  } finally {
    await source.close();
    await pg.close();
    lock.release();
  }
}
