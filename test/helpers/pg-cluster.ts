// The cluster helper is plain JavaScript so `bench/store.mjs` runs the same one (test/fakes/pg-cluster.mjs).
export { findPgBin, type PgCluster, startPgCluster } from '../fakes/pg-cluster.mjs';
