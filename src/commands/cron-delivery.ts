import { createChannelHub } from '../channels/hub.js';
import { createRunningAdapters } from '../channels/running-adapters.js';
import { createSentLedger } from '../channels/sent-ledger.js';
import type { ChannelHub, SendOutcome } from '../core/channel-hub.js';
import type { ConfigSource } from '../core/config/source.js';
import { errorMessage } from '../core/errors.js';
import { createFleetDirectory, resolveFleetDir } from '../core/fleet/fleet-directory.js';
import type { Logger } from '../core/logger.js';
import { resolveAssistantPaths } from '../core/paths.js';
import fs from 'node:fs';

/**
 * How `service cron run` delivers a task's reply without a gateway of its own. When a gateway
 * already serves this assistant, through its POST /api/send (a second connection would also
 * receive: a second Telegram poller steals the gateway's updates). Otherwise it connects the one
 * target channel just for the send, refusing anything that arrives meanwhile (not acknowledged,
 * so the platform delivers it again to the gateway later).
 */
export function createCronDelivery(opts: { dir: string; config: ConfigSource; log: Logger; env?: NodeJS.ProcessEnv }): ChannelHub & { close(): Promise<void> } {
  const env = opts.env ?? process.env;
  const hubs: Array<{ stop(): Promise<void> }> = [];

  const viaGateway = async (channel: string, chatId: string, text: string): Promise<SendOutcome | undefined> => {
    const dir = resolveAssistantPaths(opts.dir).dir;
    const gateway = createFleetDirectory({ dir: resolveFleetDir(env) })
      .list()
      .find((e) => e.dir === dir);
    if (!gateway) return undefined;
    const token = env.SERVICE_TOKEN || opts.config.current().config.gateway.token || readStoredToken(dir);
    if (!token) return undefined;
    try {
      const res = await fetch(`${gateway.url}/api/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ channel, chatId, text }),
        signal: AbortSignal.timeout(30_000),
      });
      const body = (await res.json()) as { ok?: boolean; error?: string; reason?: string; availableChannels?: string[] };
      if (res.ok) return { ok: true };
      const error = `the running gateway at ${gateway.url}: ${body.error ?? res.status}`;
      if (body.reason === 'not_found') return { ok: false, reason: 'not_found', error, availableChannels: body.availableChannels ?? [] };
      const reason = body.reason === 'unsupported' || body.reason === 'not_connected' || body.reason === 'no_channels' ? body.reason : 'failed';
      return { ok: false, reason, error };
    } catch (err) {
      opts.log.warn(`the gateway at ${gateway.url} did not take the message (${errorMessage(err)}); connecting the channel here`);
      return undefined;
    }
  };

  const direct = async (channel: string, chatId: string, text: string): Promise<SendOutcome> => {
    const hub = createChannelHub({
      dir: opts.dir,
      config: opts.config,
      log: opts.log,
      // Refused, so the adapter does not acknowledge it and the platform delivers it to the gateway later.
      onMessage: async () => {
        throw new Error('service cron run only sends; messages are for the gateway');
      },
      adapters: createRunningAdapters(),
      sent: createSentLedger(),
      only: [channel],
      backoffMs: [3_600_000],
    });
    hubs.push(hub);
    hub.start();
    await hub.settled();
    return hub.send(channel, chatId, text);
  };

  return {
    statuses: () => [],
    list: () => [],
    async send(channel, chatId, text) {
      return (await viaGateway(channel, chatId, text)) ?? direct(channel, chatId, text);
    },
    async close() {
      await Promise.all(hubs.map((h) => h.stop()));
    },
  };
}

function readStoredToken(dir: string): string | undefined {
  try {
    return fs.readFileSync(resolveAssistantPaths(dir).tokenFile, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
