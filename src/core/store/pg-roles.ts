import { formatSafeUrl } from '../config/secrets.js';
import { AppError, errorMessage } from '../errors.js';
import { FLEET_SCHEMA, PG_FLEET_MIGRATIONS } from './pg-fleet-schema.js';
import { loadPg } from './pg-load.js';
import { quoteIdent } from './pg-migrations.js';

/**
 * One database role per assistant (issue 29): assistants sharing a PostgreSQL database are kept
 * apart by the server, not by convention. The role owns its assistant's schema (and everything in
 * it) and has no other privilege but what every assistant needs in common: the shared fleet table
 * (`service_fleet.gateways`: read and write its rows; any assistant can write any row there, which
 * is why a peer's values are escaped where they are used, see engines/context.ts). It cannot
 * create schemas, so its gateways migrate their own schema only; the fleet table is created (and
 * migrated, after an upgrade that changes it) by whoever runs this script.
 *
 * `service store migrate --role` runs the script as the admin of the `--to` URL; `--print-sql`
 * prints it for a database administrator to run.
 */
export interface AssistantRole {
  role: string;
  schema: string;
  database: string;
  /** Set on a role created by the script; a role that exists keeps its password. */
  password: string;
}

/** The statements, in order, as an admin (a role that may create roles and schemas) runs them; each one is idempotent. */
export function assistantRoleSql(r: AssistantRole): string[] {
  const role = quoteIdent(r.role);
  const schema = quoteIdent(r.schema);
  const fleet = quoteIdent(FLEET_SCHEMA);
  return [
    `DO $role$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ${quoteLiteral(r.role)}) THEN
    CREATE ROLE ${role} LOGIN PASSWORD ${quoteLiteral(r.password)} NOSUPERUSER NOCREATEDB NOCREATEROLE;
  END IF;
END $role$`,
    `GRANT CONNECT ON DATABASE ${quoteIdent(r.database)} TO ${role}`,
    // The assistant's schema, and whatever an earlier owner made in it, belong to the role.
    `CREATE SCHEMA IF NOT EXISTS ${schema} AUTHORIZATION ${role}`,
    `ALTER SCHEMA ${schema} OWNER TO ${role}`,
    `DO $owner$ DECLARE t record; BEGIN
  FOR t IN SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = ${quoteLiteral(r.schema)} AND c.relkind IN ('r', 'p', 'S', 'v', 'm')
             -- a serial column's sequence follows its table
             AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')) LOOP
    EXECUTE format('ALTER %s %I.%I OWNER TO %I',
      CASE t.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END,
      ${quoteLiteral(r.schema)}, t.relname, ${quoteLiteral(r.role)});
  END LOOP;
END $owner$`,
    // The fleet every assistant of the database shares: made here (as a gateway's migration
    // would, recorded the same way), since the role cannot create it.
    `CREATE SCHEMA IF NOT EXISTS ${fleet}`,
    `CREATE TABLE IF NOT EXISTS ${fleet}.schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    ...PG_FLEET_MIGRATIONS.map(
      (sql, i) => `DO $fleet$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM ${fleet}.schema_migrations WHERE version = ${i + 1}) THEN
    SET LOCAL search_path TO ${fleet};
    ${sql.trim().replace(/\n\s*/g, '\n    ')}
    INSERT INTO ${fleet}.schema_migrations (version) VALUES (${i + 1});
  END IF;
END $fleet$`,
    ),
    `GRANT USAGE ON SCHEMA ${fleet} TO ${role}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${fleet} TO ${role}`,
  ];
}

/** The script as a file an administrator runs (psql -f): statements ended by `;`, a comment on top. */
export function formatRoleScript(r: AssistantRole): string {
  return [
    `-- One role for the assistant whose schema is ${r.schema}: it owns that schema and may use the shared fleet table, nothing else.`,
    '-- Run as a role that may create roles and schemas (psql -f this file); running it again changes nothing.',
    ...assistantRoleSql(r).map((s) => `${s};`),
    '',
  ].join('\n');
}

/**
 * Other assistants' schemas the connected role can write (create in, or change a table of): each
 * schema holding an assistant's tables (`access_grants`) but `own`. Empty is what a role per
 * assistant gives; a superuser or a shared role sees every other assistant here.
 */
export const WRITABLE_OTHER_SCHEMAS_SQL = `
  SELECT n.nspname AS schema FROM pg_namespace n
  WHERE n.nspname <> $1 AND n.nspname <> '${FLEET_SCHEMA}'
    AND EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = n.oid AND c.relname = 'access_grants' AND c.relkind = 'r')
    AND (has_schema_privilege(n.oid, 'CREATE')
      OR (has_schema_privilege(n.oid, 'USAGE') AND EXISTS (
        SELECT 1 FROM pg_class c WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'p')
          AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE'))))
  ORDER BY n.nspname COLLATE "C"`;

/** Run the script as the admin of `adminUrl`, in one transaction; whether it created the role (else it existed). */
export async function applyAssistantRole(adminUrl: string, r: AssistantRole): Promise<{ created: boolean }> {
  const made = withClient(adminUrl, async (client) => {
    await client.query('BEGIN');
    try {
      const existed = ((await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [r.role])).rowCount ?? 0) > 0;
      for (const sql of assistantRoleSql(r)) await client.query(sql);
      await client.query('COMMIT');
      return { created: !existed };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
  return made.catch((err: unknown) => {
    throw new AppError('store_role', `cannot give the assistant the role ${r.role} on ${formatSafeUrl(adminUrl)}: ${errorMessage(err)}`, {
      hint: 'the --to URL must name a role that may create roles and schemas (or run the SQL of --print-sql as one)',
      cause: err,
    });
  });
}

/** The other assistants' schemas the role of `url` can write (WRITABLE_OTHER_SCHEMAS_SQL). */
export function findWritableOtherSchemas(url: string, ownSchema: string): Promise<string[]> {
  return withClient(url, async (client) => (await client.query(WRITABLE_OTHER_SCHEMAS_SQL, [ownSchema])).rows.map((row) => String(row.schema)));
}

/** `url` with this role's credentials (the password left out when not known), for store.url. */
export function formatRoleUrl(url: string, role: string, password?: string): string {
  const u = new URL(url);
  u.username = encodeURIComponent(role);
  u.password = password ? encodeURIComponent(password) : '';
  u.searchParams.delete('user');
  u.searchParams.delete('password');
  return u.toString();
}

async function withClient<T>(url: string, fn: (client: InstanceType<ReturnType<typeof loadPg>['Client']>) => Promise<T>): Promise<T> {
  const client = new (loadPg().Client)({ connectionString: url, connectionTimeoutMillis: 15_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A string as an SQL literal (for the statements that cannot take parameters: DDL, DO blocks). */
function quoteLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}
