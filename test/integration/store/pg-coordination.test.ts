import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgStore } from '../../../src/core/store/pg-store.js';
import type { CoordinationStore, Store } from '../../../src/core/store/types.js';
import { usePgCluster } from '../../helpers/pg-cluster.js';
import { HANG_MS, until } from '../../helpers/wait.js';

// Gateways of one assistant on several hosts: each store below stands for one host's gateway.
const pgCluster = usePgCluster();
let url = '';
let n = 0;
const opened: Store[] = [];
const open = (schema: string, opts: { origin?: string } = {}) => {
  const s = createPgStore({ url, schema, ...opts });
  opened.push(s);
  return s;
};
const coordination = (s: Store): CoordinationStore => {
  if (!s.coordination) throw new Error('a PostgreSQL store coordinates');
  return s.coordination;
};

beforeAll(async () => {
  url = await pgCluster.database();
});

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
});

describe('postgres coordination: the leader lease', () => {
  it('goes to exactly one of several gateways claiming at once; its holder renews it, the others are told who holds it', async () => {
    const schema = `l${++n}`;
    const hosts = [open(schema), open(schema), open(schema), open(schema)].map(coordination);
    const claims = await Promise.all(hosts.map((c, i) => c.claimLease('leader', `h${i}`, HANG_MS)));
    const winners = claims.flatMap((c, i) => (c.held ? [i] : []));
    expect(winners).toHaveLength(1);
    const winner = winners[0] ?? -1;
    for (const c of claims) if (!c.held) expect(c.holder).toBe(`h${winner}`);
    expect(await hosts[winner]?.claimLease('leader', `h${winner}`, HANG_MS)).toEqual({ held: true });
    const other = (winner + 1) % hosts.length;
    expect(await hosts[other]?.claimLease('leader', `h${other}`, HANG_MS)).toEqual({ held: false, holder: `h${winner}` });
  });

  it('passes to another gateway once the holder stops renewing, telling it how long ago the holder was last active', async () => {
    const schema = `l${++n}`;
    const [a, b] = [open(schema), open(schema)].map(coordination);
    expect((await a?.claimLease('leader', 'a', 300))?.held).toBe(true);
    expect((await b?.claimLease('leader', 'b', 300))?.held).toBe(false);
    // a stops renewing (killed): its lease runs out and b takes it.
    let taken: Awaited<ReturnType<CoordinationStore['claimLease']>> | undefined;
    await until(async () => {
      taken = await b?.claimLease('leader', 'b', HANG_MS);
      return taken?.held === true;
    });
    expect(taken?.held && taken.previousActiveAgoMs).toBeGreaterThanOrEqual(300);
    expect((await a?.claimLease('leader', 'a', 300))?.held).toBe(false);
  });

  it('is free at once after a clean release, which says from when the next holder must catch up', async () => {
    const schema = `l${++n}`;
    const [a, b] = [open(schema), open(schema)].map(coordination);
    expect((await a?.claimLease('leader', 'a', HANG_MS))?.held).toBe(true);
    await b?.releaseLease('leader', 'b'); // not the holder: changes nothing
    expect((await b?.claimLease('leader', 'b', HANG_MS))?.held).toBe(false);
    await a?.releaseLease('leader', 'a', 60_000);
    const next = await b?.claimLease('leader', 'b', HANG_MS);
    expect(next?.held).toBe(true);
    expect(next?.held && next.previousActiveAgoMs).toBeGreaterThanOrEqual(60_000);
  });
});

describe('postgres coordination: session keys', () => {
  it('holds a key against the other gateways until released; other keys are free meanwhile', async () => {
    const schema = `k${++n}`;
    const [a, b] = [open(schema), open(schema)].map(coordination);
    const unlockA = await a?.lockSessionKey('chat-1');
    let bHas = false;
    const bWaits = b?.lockSessionKey('chat-1').then((unlock) => {
      bHas = true;
      return unlock;
    });
    const other = await b?.lockSessionKey('chat-2');
    await other?.();
    // b is still waiting for chat-1 (a round trip on each side proves the check ran meanwhile).
    await a?.claimLease('probe', 'a', 1000);
    await b?.claimLease('probe', 'b', 1000);
    expect(bHas).toBe(false);
    await unlockA?.();
    const unlockB = await bWaits;
    expect(bHas).toBe(true);
    await unlockB?.();
    await unlockB?.(); // idempotent
  });

  it('stops waiting when the turn is aborted, and a gateway that dies (its connections end) drops its keys', async () => {
    const schema = `k${++n}`;
    const dying = open(schema);
    const [a, b] = [coordination(dying), coordination(open(schema))];
    await a.lockSessionKey('chat-1');
    const abort = new AbortController();
    const waiting = b.lockSessionKey('chat-1', abort.signal);
    abort.abort();
    await expect(waiting).rejects.toThrow(/abort/i);
    await dying.close(); // the lock's connection ends as it would with the process
    const unlock = await b.lockSessionKey('chat-1');
    await unlock();
  });

  it('resumes an engine session only where it was made: elsewhere the key is known, its session starts afresh', async () => {
    const schema = `o${++n}`;
    const here = open(schema, { origin: 'host-a:/srv/bot' });
    const there = open(schema, { origin: 'host-b:/srv/bot' });
    await here.saveSession({ key: 'k', engine: 'engine_b', sessionId: 'sess-1', createdAt: 1, updatedAt: 2 });
    expect((await here.getSession('k'))?.sessionId).toBe('sess-1');
    expect(await there.getSession('k')).toMatchObject({ key: 'k', engine: 'engine_b', sessionId: null, updatedAt: 2 });
    expect((await there.listSessions()).map((s) => s.sessionId)).toEqual([null]);
    // Once the other host runs a turn on the key, the session is its own.
    await there.saveSession({ key: 'k', engine: 'engine_b', sessionId: 'sess-2', createdAt: 1, updatedAt: 3 });
    expect((await there.getSession('k'))?.sessionId).toBe('sess-2');
    expect((await here.getSession('k'))?.sessionId).toBeNull();
  });
});
