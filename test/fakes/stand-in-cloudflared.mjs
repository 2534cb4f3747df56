#!/usr/bin/env node
// A stand-in for cloudflared, the program untun runs for `service gateway --tunnel`. untun looks for
// it at $TMPDIR/node-untun/cloudflared.$CLOUDFLARED_VERSION; a test copies this file there. It is
// started as `cloudflared tunnel --url <local url> --no-tls-verify` and prints what cloudflared
// 2026.x prints on stderr (recorded by hand, timestamps aside):
//   STANDIN_CLOUDFLARED=offline   no network: the quick tunnel cannot be requested; exit 1
//   STANDIN_CLOUDFLARED=online    the quick tunnel's URL in cloudflared's box, then it runs until
//                                 SIGINT/SIGTERM (untun stops it with SIGINT)
// It writes its pid and argv to $STANDIN_CLOUDFLARED_LOG (a JSON line) when set.
import fs from 'node:fs';

const mode = process.env.STANDIN_CLOUDFLARED ?? 'offline';
if (process.env.STANDIN_CLOUDFLARED_LOG)
  fs.appendFileSync(process.env.STANDIN_CLOUDFLARED_LOG, `${JSON.stringify({ pid: process.pid, argv: process.argv.slice(2) })}\n`);
const ts = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const say = (level, text) => process.stderr.write(`${ts()} ${level} ${text}\n`);

say('INF', 'Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out.');
say('INF', 'Requesting new quick Tunnel on trycloudflare.com...');
if (mode === 'offline') {
  say(
    'ERR',
    'failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel": dial tcp: lookup api.trycloudflare.com on 127.0.0.53:53: server misbehaving',
  );
  process.exit(1);
}
const url = 'https://stand-in-quick-tunnel.trycloudflare.com';
const box = '+--------------------------------------------------------------------------------------------+';
say('INF', box);
say('INF', '|  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |');
say('INF', `|  ${url.padEnd(90)}|`);
say('INF', box);
say('INF', 'Registered tunnel connection connIndex=0 connection=0b3c1f5e-stand-in event=0 ip=127.0.0.1 location=LOCAL protocol=quic');
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
setInterval(() => undefined, 1 << 30);
