import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../../helpers/cli.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/** Issue 12, item 10: a busy port is an ordinary error (exit 1, one line), not a bug report (exit 70). */
describe('service gateway on a busy port', () => {
  it('exits 1 with one line naming the port and what to do', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'gateway:\n  token: tok-busy-port-123456\n') });
      const r = await runCommand(['gateway', '-d', dir, '--port', String(port)], { env: { SERVICE_TOKEN: '', SERVICE_FLEET_DIR: testdir() } });
      expect(r.code).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toEqual([`error: port ${port} on 127.0.0.1 is already in use; stop what is using it or choose another port with --port`]);
      expect(r.stdout).toBe('');
    } finally {
      holder.close();
    }
  });
});
