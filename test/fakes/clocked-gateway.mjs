#!/usr/bin/env node
// `service gateway` in a process of its own whose scheduled tasks run on a fake clock that the
// test moves: the package's embedding API (dist/index.js, `npm run build` first) with the `clock`
// option. The test can kill -9 it like a gateway it started with bin/service.js.
//
//   clocked-gateway.mjs <dir> <token> <clock start, unix ms>
//
// Prints `serving on <url>` and `token: <token>` as `service gateway` does, and logs to stderr as
// it does. Over the IPC channel: {type: 'advance', id, to} moves the clock to `to` (unix ms; never
// backwards), firing the timers it passes, and answers {type: 'advanced', id, now}. SIGTERM and
// SIGINT stop it cleanly (exit 0), as they stop `service gateway`.
import { startGateway } from '../../dist/index.js';
import { createFakeClock } from './fake-clock.mjs';

const [dir, token, start] = process.argv.slice(2);
const clock = createFakeClock(Number(start));

process.on('message', (m) => {
  if (m?.type !== 'advance') return;
  void clock.advance(Math.max(0, m.to - clock.now())).then(() => process.send?.({ type: 'advanced', id: m.id, now: clock.now() }));
});

const gateway = await startGateway({ dir, port: 0, token, clock });
process.stdout.write(`serving on ${gateway.url}\ntoken: ${gateway.token}\n`);
const stop = () => void gateway.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
