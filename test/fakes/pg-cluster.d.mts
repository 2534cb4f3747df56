export interface PgCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /** A fresh database on the cluster (its URL): one per test that needs a clean slate. */
  createDatabase(): Promise<string>;
  stop(): void;
}

/** The directory of initdb and pg_ctl: PG_BIN, else the newest /usr/lib/postgresql/<version>/bin, else PATH; throws saying what to install. */
export function findPgBin(env?: NodeJS.ProcessEnv): string;

/** initdb + pg_ctl in a temporary folder (as `postgres` when root), 127.0.0.1 on a free port, trust, fsync off. */
export function startPgCluster(): Promise<PgCluster>;
