import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createPgStore } from '../../../src/core/store/pg-store.js';
import { writeTestAssistant } from '../../helpers/assistant.js';
import { runCli } from '../../helpers/cli.js';
import { findPgBin, usePgCluster } from '../../helpers/pg-cluster.js';
import { parseSseStrict, startTestServer } from '../../helpers/server.js';
import { testdir } from '../../helpers/testdir.js';

/**
 * Issue 35, item 5, for a PostgreSQL store: `service store backup` says to use pg_dump, and the
 * assistant's schema is dumpable that way: dumped while its gateway runs, restored into another
 * database, the conversation is there.
 */
const pgCluster = usePgCluster();
const bin = findPgBin();
const tools = { dump: path.join(bin, 'pg_dump'), restore: path.join(bin, 'pg_restore') };
const haveTools = fs.existsSync(tools.dump) && fs.existsSync(tools.restore);
let url = '';

beforeAll(async () => {
  url = await pgCluster.database();
});

describe('backing up a PostgreSQL store', () => {
  it('service store backup / restore name pg_dump / pg_restore and the schema, and never the password', async () => {
    const { dir } = writeTestAssistant({ yaml: 'store:\n  url: postgres://keeper:hunter2-secret@127.0.0.1:1/db\n' });
    for (const action of ['backup', 'restore']) {
      const file = action === 'backup' ? path.join(dir, 'out.dump') : path.join(testdir({ 'x.dump': 'x' }), 'x.dump');
      const r = await runCli(['store', action, file, '-d', dir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`this assistant's store is PostgreSQL`);
      expect(r.stderr).toContain(
        action === 'backup' ? 'pg_dump --dbname "$SERVICE_STORE_URL" --schema assistant_tester' : 'pg_restore --dbname "$SERVICE_STORE_URL"',
      );
      expect(r.stderr).not.toContain('hunter2-secret');
    }
  });

  it.skipIf(!haveTools)(
    `pg_dump --schema takes the assistant's schema while it serves; pg_restore brings it back elsewhere (${haveTools ? bin : `skipped: no pg_dump/pg_restore in ${bin}`})`,
    async () => {
      process.env.TEST_PG_BACKUP_URL = url;
      const s = await startTestServer({ yaml: 'store:\n  url: ${TEST_PG_BACKUP_URL}\n' });
      const file = path.join(testdir(), 'assistant.dump');
      try {
        const events = parseSseStrict(await (await s.api('/chat', { json: { message: 'remember me', sessionKey: 'k1' } })).text());
        expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
        // As docs/operations.md says: custom format, the assistant's schema only, taken while the gateway serves.
        execFileSync(tools.dump, ['--dbname', url, '--schema', 'assistant_tester', '--format', 'custom', '--file', file], { stdio: 'pipe' });
      } finally {
        await s.stop();
        delete process.env.TEST_PG_BACKUP_URL;
      }
      const elsewhere = await pgCluster.database();
      execFileSync(tools.restore, ['--dbname', elsewhere, '--no-owner', file], { stdio: 'pipe' });
      const restored = createPgStore({ url: elsewhere, schema: 'assistant_tester' });
      try {
        expect((await restored.readHistory('k1')).map((h) => h.text)).toEqual(['remember me', 'ECHO: remember me\nTURN: 1']);
        expect(await restored.getSession('k1')).toMatchObject({ key: 'k1', turns: 1 });
        expect((await restored.metrics()).totalMessages).toBe(1);
      } finally {
        await restored.close();
      }
    },
  );
});
