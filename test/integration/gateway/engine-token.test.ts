import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { type ChannelGateway, replies, startChannelGateway } from '../../helpers/channel-gateway.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { type Gateway, launchGateway } from '../../../src/gateway.js';
import { writeTestAssistant } from '../../helpers/assistant.js';
import { TEST_TOKEN } from '../../helpers/server.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * The engine never inherits the gateway's credentials (issue 29, Medium 7), through the real
 * gateway (started with a token, as `--token` does, and with SERVICE_TOKEN in its environment),
 * a fake Telegram and the stand-in engine running real `curl`: the engine's SERVICE_TOKEN is its
 * own, sends a message (the message-push skill's two calls), and is refused (403) everywhere the
 * owner's token goes.
 */
describe("the engine's own token", () => {
  let tg: FakePlatform | undefined;
  let gw: ChannelGateway | undefined;
  afterEach(async () => {
    await gw?.stop();
    await tg?.close();
  });

  const status = (name: string, method: string, route: string, body?: string) =>
    `RUN-SH:curl -s -o /dev/null -w '%{http_code}' -X ${method} "$SERVICE_URL${route}" -H "Authorization: Bearer $SERVICE_TOKEN"${
      body ? ` -H 'Content-Type: application/json' -d '${body}'` : ''
    } > ${name}.status`;

  it('SERVICE_URL and a send-only token: /api/channels and /api/send work, admin routes are 403, the admin token is not there', async () => {
    tg = await startFakeTelegram();
    gw = await startChannelGateway({ channel_e: tg.channelConfig }, '', {}, { SERVICE_TOKEN: 'owner-token-from-the-environment' });
    await tg.waitForConnection(HANG_MS);
    const f = tg;
    const message = [
      status('channels', 'GET', '/api/channels'),
      status('send', 'POST', '/api/send', '{"channel":"channel_e","chatId":"1002","text":"PUSHED-BY-THE-AGENT"}'),
      status('config', 'GET', '/api/config'),
      status('patch', 'PATCH', '/api/config', '{"maxConcurrent":1}'),
      status('chat', 'POST', '/chat', '{"message":"hi"}'),
      status('approve', 'POST', '/approve', '{"id":"abcde","decision":"allow"}'),
      status('access', 'GET', '/api/access'),
      status('events', 'GET', '/api/events'),
      'SAY:done',
    ].join('\n');
    await f.deliver({ chatType: 'direct', userId: '1001', text: message });
    await until(() => replies(f, '1001').some((o) => o.text.includes('done')), HANG_MS, 'the reply');
    const read = (name: string) => fs.readFileSync(path.join(gw!.dir, `${name}.status`), 'utf8');
    expect(read('channels')).toBe('200');
    expect(read('send')).toBe('200');
    await until(() => replies(f, '1002').some((o) => o.text.includes('PUSHED-BY-THE-AGENT')), HANG_MS, 'the pushed message');
    for (const name of ['config', 'patch', 'chat', 'approve', 'access', 'events']) expect(read(name), name).toBe('403');
    expect(gw.config.current().config.maxConcurrent).toBe(10);

    // What the engine saw: its own token and the URL, never the owner's token.
    const env = gw.standIn.runs()[0]?.env as Record<string, string>;
    expect(env.SERVICE_URL).toBe(gw.url);
    expect(env.SERVICE_TOKEN).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(env.SERVICE_TOKEN).not.toBe(TEST_TOKEN);
    expect(JSON.stringify(env)).not.toContain('owner-token-from-the-environment');

    // The owner's token still goes everywhere; the engine's is refused with 403 and says why.
    expect((await gw.api('/api/config')).status).toBe(200);
    const refused = await fetch(`${gw.url}/api/status`, { headers: { authorization: `Bearer ${env.SERVICE_TOKEN}` } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toMatch(/may only send messages and files/);
  });
});

describe("the engine's own token over HTTPS", () => {
  let gw: Gateway | undefined;
  afterEach(async () => {
    await gw?.close(0);
    gw = undefined;
  });

  it("SERVICE_URL says https and SERVICE_CA_FILE names the certificate: the skill's curl call reaches the gateway", async () => {
    const { dir, standIn } = writeTestAssistant();
    gw = await launchGateway({
      dir,
      port: 0,
      token: TEST_TOKEN,
      https: true,
      log: createSilentLogger(),
      env: { ...process.env, ...standIn.env, SERVICE_FLEET_DIR: testdir({}, 'service-fleet-') },
    });
    const cert = fs.readFileSync(path.join(dir, '.service', 'tls', 'cert.pem'));
    // The skill's own form of the call: --cacert only when SERVICE_CA_FILE is set.
    const message = `RUN-SH:curl -s -o /dev/null -w '%{http_code}' \${SERVICE_CA_FILE:+--cacert "$SERVICE_CA_FILE"} "$SERVICE_URL/api/channels" -H "Authorization: Bearer $SERVICE_TOKEN" > channels.status\nSAY:done`;
    const reply = await postChat(`${gw.url}/chat`, cert, { message });
    expect(reply).toContain('"status":"completed"');
    expect(fs.readFileSync(path.join(dir, 'channels.status'), 'utf8')).toBe('200');
    const env = standIn.runs()[0]?.env as Record<string, string>;
    expect(env.SERVICE_URL).toBe(gw.url);
    expect(env.SERVICE_CA_FILE).toBe(path.join(dir, '.service', 'tls', 'cert.pem'));
  });
});

/** POST /chat over TLS trusting `ca`, read to the end of the stream. */
function postChat(url: string, ca: Buffer, body: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: 'POST', ca, headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
