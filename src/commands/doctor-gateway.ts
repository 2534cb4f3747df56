import net from 'node:net';
import { resolveGatewayBind } from '../core/config/bind.js';
import type { LoadedConfig } from '../core/config/load.js';
import { probeHealth } from '../core/fleet/health.js';
import { isPidAlive } from '../core/fleet/process-alive.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { readGatewayHolder } from '../core/store/gateway-lock.js';
import type { DoctorCheck } from './doctor.js';

/**
 * The gateway port, beside the directory's own gateway: a port held by this assistant's running
 * gateway (its lock's record in .service/gateway.json names a live pid, and its URL answers
 * /health) is that gateway, not a problem. Anything else holding the port is.
 */
export async function checkGatewayPort(loaded: LoadedConfig): Promise<DoctorCheck[]> {
  const bind = resolveGatewayBind(loaded.config, {});
  const own = await findOwnGateway(loaded.dir);
  const free = await isPortFree(bind.host, bind.port);
  const where = `${bind.host}:${bind.port}`;
  const checks: DoctorCheck[] = [];
  if (free.ok) checks.push({ ok: true, title: 'gateway port', detail: `${where} is free` });
  else if (own?.answers && own.port === bind.port) {
    return [{ ok: true, title: 'gateway', detail: `running: this assistant's gateway serves ${where} (pid ${own.pid}, ${own.url}, answers /health)` }];
  } else {
    checks.push({
      ok: false,
      title: 'gateway port',
      detail: `${where} is not free (${free.code})${own && own.port === bind.port ? `: this assistant's gateway (pid ${own.pid}) holds it but ${own.problem}` : ''}`,
      fix:
        own && own.port === bind.port
          ? `it may still be starting or be stuck: look at its output; \`kill ${own.pid}\` stops it (running turns get their grace period)`
          : 'stop what uses it, or set gateway.port / SERVICE_PORT',
    });
  }
  // Running on another port (--port, SERVICE_PORT when it started): say so, it is not a problem.
  if (own && own.port !== bind.port) {
    checks.push({ ok: true, title: 'gateway', detail: `running: this assistant's gateway serves ${own.url ?? '(starting)'} (pid ${own.pid})` });
  }
  return checks;
}

// --- internal ---

interface OwnGateway {
  pid: number;
  url?: string;
  port?: number;
  answers: boolean;
  /** Why it does not answer, when it does not. */
  problem?: string;
}

/** This directory's gateway, when its lock's record names a process that still runs. */
async function findOwnGateway(dir: string): Promise<OwnGateway | undefined> {
  const holder = readGatewayHolder(resolveAssistantPaths(dir).stateDir);
  if (!holder || !isPidAlive(holder.pid)) return undefined;
  if (!holder.url) return { pid: holder.pid, answers: false, problem: 'is still starting (no URL yet)' };
  const port = Number(new URL(holder.url).port);
  const health = await probeHealth(holder.url, 1_000);
  return {
    pid: holder.pid,
    url: holder.url,
    port,
    answers: health.ok,
    ...(health.ok ? {} : { problem: `does not answer /health at ${holder.url} (${health.error})` }),
  };
}

function isPortFree(host: string, port: number): Promise<{ ok: true } | { ok: false; code: string }> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve({ ok: false, code: err.code ?? err.message }));
    server.listen(port, host, () => server.close(() => resolve({ ok: true })));
  });
}
