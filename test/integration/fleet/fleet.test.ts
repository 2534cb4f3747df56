import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../../helpers/cli.js';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';

/**
 * Two real `service gateway` processes sharing one fleet directory: they register, list each
 * other, see each other in the assistant context written before a turn, and a gateway killed
 * with SIGKILL (no chance to deregister) drops out of every listing.
 */
const assistant = (name: string, role: string, token: string) =>
  testdir({ 'service.yaml': `name: ${name}\nengine: engine_b\npersona:\n  role: ${role}\ngateway:\n  token: ${token}\n` });

const chat = async (g: GatewayProcess, token: string, message: string) => {
  const res = await fetch(`${g.url}/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message }),
  });
  const text = await res.text();
  expect(text).toContain('"status":"completed"');
};

const fleetPanel = async (g: GatewayProcess, token: string) =>
  ((await (await fetch(`${g.url}/api/fleet`, { headers: { authorization: `Bearer ${token}` } })).json()) as { peers: Array<Record<string, unknown>> }).peers;

const contextOf = (dir: string) => fs.readFileSync(path.join(dir, 'CLAUDE.md'), 'utf8');

interface Listed {
  dir: string;
  gateways: Array<Record<string, unknown>>;
}

describe('fleet registry across real gateways', () => {
  it('two gateways register and see each other; a SIGKILLed one is ignored and cleaned; SIGTERM deregisters', async () => {
    const fleetDir = testdir({}, 'service-fleet-');
    const standIn = createStandIn();
    const env = { ...standIn.env, SERVICE_FLEET_DIR: fleetDir, SERVICE_TOKEN: '' };
    const alphaDir = assistant('alpha', 'Answers billing questions', 'tok-alpha-1234567');
    const betaDir = assistant('beta', 'Runs the servers', 'tok-beta-12345678');
    const alpha = await startGatewayProcess(alphaDir, [], env);
    const beta = await startGatewayProcess(betaDir, [], env);
    const ls = async (): Promise<Listed> => {
      const r = await runCommand(['fleet', 'ls', '--json'], { env: { SERVICE_FLEET_DIR: fleetDir } });
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as Listed;
    };
    try {
      const listed = await ls();
      expect(listed.dir).toBe(fleetDir);
      expect(listed.gateways).toEqual([
        {
          format: 1,
          name: 'alpha',
          role: 'Answers billing questions',
          engine: 'engine_b',
          host: '127.0.0.1',
          port: Number(new URL(alpha.url).port),
          url: alpha.url,
          pid: alpha.child.pid,
          startedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          version: expect.any(String),
          dir: alphaDir,
          hostname: os.hostname(),
          healthy: true,
        },
        expect.objectContaining({ name: 'beta', role: 'Runs the servers', url: beta.url, pid: beta.child.pid, dir: betaDir, healthy: true }),
      ]);
      const table = await runCommand(['fleet', 'ls'], { env: { SERVICE_FLEET_DIR: fleetDir } });
      expect(table.stdout).toMatch(/^NAME\s+ROLE\s+ENGINE\s+HOST\s+URL\s+PID\s+UP\s+HEALTH$/m);
      expect(table.stdout).toMatch(
        new RegExp(`^beta\\s+Runs the servers\\s+engine_b\\s+${os.hostname()}\\s+${beta.url}\\s+${beta.child.pid}\\s+\\S+\\s+ok \\(`, 'm'),
      );

      // Each assistant's context, written before its turn, lists the other one only.
      await chat(alpha, 'tok-alpha-1234567', 'hello alpha');
      await chat(beta, 'tok-beta-12345678', 'hello beta');
      expect(contextOf(alphaDir)).toContain(
        `## Peer assistants\n\nOther running assistants and the host each runs on (see the multi-bot skill):\n\n- beta (Runs the servers): ${beta.url} on ${os.hostname()}\n`,
      );
      expect(contextOf(alphaDir)).not.toContain('- alpha (');
      expect(contextOf(betaDir)).toContain(`- alpha (Answers billing questions): ${alpha.url} on ${os.hostname()}\n`);
      expect(contextOf(betaDir)).not.toContain('- beta (');

      // The dashboard's fleet panel: this gateway marked, the peer probed and linked.
      expect(await fleetPanel(alpha, 'tok-alpha-1234567')).toEqual([
        expect.objectContaining({ name: 'alpha', self: true, healthy: true }),
        expect.objectContaining({ name: 'beta', role: 'Runs the servers', self: false, healthy: true, dashboardUrl: `${beta.url}/` }),
      ]);

      // SIGKILL: beta cannot deregister; its file stays until someone lists the fleet.
      expect(await beta.stop('SIGKILL')).toBeNull();
      expect(fs.readdirSync(fleetDir).filter((f) => f.endsWith('.json'))).toHaveLength(2);
      expect((await ls()).gateways.map((g) => g.name)).toEqual(['alpha']);
      expect(fs.readdirSync(fleetDir)).toEqual([`gateway-${alpha.child.pid}-${new URL(alpha.url).port}.json`]);
      expect((await fleetPanel(alpha, 'tok-alpha-1234567')).map((p) => p.name)).toEqual(['alpha']);
      await chat(alpha, 'tok-alpha-1234567', 'anyone there?');
      expect(contextOf(alphaDir)).not.toContain('Peer assistants');
    } finally {
      await beta.stop('SIGKILL');
      expect(await alpha.stop('SIGTERM')).toBe(0);
    }
    expect(fs.readdirSync(fleetDir)).toEqual([]);
    expect((await ls()).gateways).toEqual([]);
  });
});
