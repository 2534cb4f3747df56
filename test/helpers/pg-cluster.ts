import { afterAll, beforeAll } from 'vitest';
import { type PgCluster, startPgCluster } from '../fakes/pg-cluster.mjs';

// The cluster helper is plain JavaScript so `bench/store.mjs` runs the same one (test/fakes/pg-cluster.mjs).
export { findPgBin, type PgCluster, startPgCluster } from '../fakes/pg-cluster.mjs';

/**
 * One throwaway cluster for the calling test file: started before its tests, stopped after them
 * (vitest runs after-hooks in reverse order, so the file's own, registered later, close its pools
 * first). `database()` makes a fresh database on it and returns its URL.
 */
export function usePgCluster(): { database(): Promise<string> } {
  let cluster: PgCluster | undefined;
  beforeAll(async () => {
    cluster = await startPgCluster();
  });
  afterAll(() => cluster?.stop());
  return {
    database: () => {
      if (!cluster) throw new Error('the cluster is started before the tests (beforeAll)');
      return cluster.createDatabase();
    },
  };
}
