/**
 * A gateway's warm engine processes outlive no gateway: SIGTERM ends them with it, and after a
 * SIGKILL (which ends nothing) the next start's reaper finds them by their records and ends them.
 * `service status` lists a live gateway's warm processes with their memory. The resident engine
 * is the stand-in ACP agent; the gateway is `service gateway` for real.
 */
import { describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../../helpers/gateway-process.js';
import { runCli } from '../../helpers/cli.js';
import { writeTestAssistant } from '../../helpers/assistant.js';
import { until } from '../../helpers/wait.js';
import { isAlive } from '../../helpers/warm.js';

const TOKEN = 'warm-gateway-token-123456';

async function chat(url: string, message: string): Promise<string> {
  const r = await fetch(`${url}/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message, sessionKey: 'k' }),
  });
  return r.text();
}

async function warmPids(url: string): Promise<number[]> {
  const s = (await fetch(`${url}/api/status`, { headers: { authorization: `Bearer ${TOKEN}` } }).then((r) => r.json())) as {
    warm: { enabled: boolean; processes: Array<{ pid: number; rssBytes: number; sessionKey: string }> };
  };
  expect(s.warm.enabled).toBe(true);
  for (const p of s.warm.processes) expect(p.rssBytes).toBeGreaterThan(0);
  return s.warm.processes.map((p) => p.pid);
}

describe('warm engine processes and the gateway process', () => {
  it('SIGKILL leaves the warm process; the next start ends it; SIGTERM ends the warm process with the gateway', async () => {
    const { dir, standIn } = writeTestAssistant({ engine: 'acp' });
    const env = { ...standIn.env, SERVICE_TOKEN: TOKEN };
    const first = await startGatewayProcess(dir, [], env);
    // LINGER: the agent outlives the end of its stdin (most engines exit on it; a stuck one would not).
    expect(await chat(first.url, 'LINGER one')).toContain('ECHO: LINGER one');
    const [pid] = await warmPids(first.url);
    expect(pid).toBeDefined();

    const status = await runCli(['status', '-d', dir], { env });
    expect(status.stdout).toMatch(/Warm {7}on: up to 4 engine process\(es\), each ended after 600 s idle; 1 running/);
    expect(status.stdout).toContain(`pid ${pid}  acp  "k"`);

    await first.stop('SIGKILL');
    expect(isAlive(pid!), 'a SIGKILL ends nothing: the engine is in its own process group').toBe(true);

    const second = await startGatewayProcess(dir, [], env);
    await until(() => !isAlive(pid!), undefined, 'the reaper to end the warm process left behind');
    expect(await chat(second.url, 'two')).toContain('ECHO: two');
    const [again] = await warmPids(second.url);
    expect(again).not.toBe(pid);
    await second.stop('SIGTERM');
    expect(isAlive(again!), 'SIGTERM: the warm process ends with the gateway').toBe(false);
  });
});
