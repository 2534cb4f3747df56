#!/usr/bin/env node
// The floor of a gateway that starts one engine process per turn: the least such a server can do,
// in node, and nothing else. bench/gateway.mjs measures it exactly as it measures `service gateway`
// (same stand-in engine, same clients, same /proc readings), so the two columns say how much of
// our cost is our own and how much any process-per-turn gateway on node pays.
//
// Per POST /chat: read the JSON body, start `claude -p --output-format stream-json --verbose` from
// PATH in its own process group with the message on stdin, split its stdout into lines, parse each
// as JSON, write one SSE frame per line, and end the response when the process has exited. No
// session, no history, no store, no queue, no validation, no process-tree cleanup, no timeout.
// GET /health answers a constant. Listens on 127.0.0.1, on FLOOR_PORT when set (else any free port),
// and prints "floor is serving on <url>" once it does.
//
// With --libs it first does, once, what every gateway start needs the chosen packages for: parse
// argv with commander, read a YAML file with yaml, validate it with a zod schema, open a SQLite
// database (WAL) with better-sqlite3 and write to it, answer one request through an h3 app, load
// listhen, and run one process through execa. Nothing of them runs per turn. The difference
// between the two floors is what loading those packages costs, whoever loads them.
//
// With --stack (implies --libs) the relay itself is built on the chosen HTTP and process packages,
// per turn: an h3 app served by listhen, the body read by h3, the events written by h3's
// EventStream, the engine started by execa. What any gateway built on h3, listhen and execa pays.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { applyHeapFlags } from '../bin/heap-flags.js';

// The gateway's heap settings, so the floor's memory is the least node needs, not node's defaults.
applyHeapFlags();

const STACK = process.argv.includes('--stack');
if (STACK || process.argv.includes('--libs')) await useChosenPackages();
if (STACK) {
  await serveOnStack();
} else {
  serveBare();
}

function serveBare() {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      const body = '{"status":"ok"}';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (req.method !== 'POST' || req.url !== '/chat') {
      res.writeHead(404).end();
      return;
    }
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let message = '';
      try {
        message = String(JSON.parse(body).message ?? '');
      } catch {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const child = spawn('claude', ['-p', '--output-format', 'stream-json', '--verbose'], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
      child.on('error', () => res.end('data: {"type":"error"}\n\n'));
      child.stdin.on('error', () => undefined);
      child.stdin.end(message);
      child.stderr.resume();
      let rest = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk) => {
        rest += chunk;
        for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
          const line = rest.slice(0, nl);
          rest = rest.slice(nl + 1);
          try {
            res.write(`data: ${JSON.stringify(JSON.parse(line))}\n\n`);
          } catch {
            // not JSON: skipped
          }
        }
      });
      child.on('close', () => res.end('data: {"type":"done"}\n\n'));
    });
  });
  server.listen(Number(process.env.FLOOR_PORT ?? 0), '127.0.0.1', () => console.log(`floor is serving on http://127.0.0.1:${server.address().port}`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

/** The same relay as an h3 app on listhen, the engine through execa. */
async function serveOnStack() {
  const [{ H3, EventStream, readBody }, { toNodeHandler }, { listen }, { execa }] = await Promise.all([
    import('h3'),
    import('h3/node'),
    import('listhen'),
    import('execa'),
  ]);
  const app = new H3();
  app.get('/health', () => ({ status: 'ok' }));
  app.post('/chat', async (event) => {
    const body = await readBody(event);
    const stream = new EventStream(event);
    const child = execa('claude', ['-p', '--output-format', 'stream-json', '--verbose'], {
      detached: true,
      input: String(body?.message ?? ''),
      buffer: false,
      reject: false,
    });
    let rest = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      rest += chunk;
      const lines = [];
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
        const line = rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        try {
          lines.push(JSON.stringify(JSON.parse(line)));
        } catch {
          // not JSON: skipped
        }
      }
      if (lines.length) void stream.push(lines);
    });
    child.stderr.resume();
    void child.then(async () => {
      await stream.push('{"type":"done"}');
      await stream.close();
    });
    return stream;
  });
  const listener = await listen(toNodeHandler(app), {
    hostname: '127.0.0.1',
    port: { port: Number(process.env.FLOOR_PORT ?? 0), random: !process.env.FLOOR_PORT },
    showURL: false,
    autoClose: false,
    isProd: true,
    qr: false,
  });
  console.log(`floor is serving on http://127.0.0.1:${listener.address.port}`);
  process.on('SIGTERM', () => void listener.close().then(() => process.exit(0)));
}

async function useChosenPackages() {
  const [{ Command }, YAML, { z }, { default: Database }, { H3 }, _listhen, { execa }, fs, os, path] = await Promise.all([
    import('commander'),
    import('yaml'),
    import('zod'),
    import('better-sqlite3'),
    import('h3'),
    import('listhen'),
    import('execa'),
    import('node:fs'),
    import('node:os'),
    import('node:path'),
  ]);
  new Command('floor').option('--libs').option('--stack').parse(process.argv);
  const app = new H3();
  app.get('/once', () => ({ ok: true }));
  await (await app.request('/once')).text();
  await execa('true');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'floor-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'service.yaml');
  fs.writeFileSync(file, 'name: floor\nengine: engine_b\ngateway:\n  port: 3000\n  host: 127.0.0.1\nskills: [a, b]\n');
  const schema = z.object({
    name: z.string().min(1),
    engine: z.enum(['engine_a', 'engine_b', 'engine_c', 'engine_d']),
    gateway: z.object({ port: z.number().int(), host: z.string() }).partial().default({}),
    skills: z.array(z.string()).default([]),
  });
  schema.parse(YAML.parse(fs.readFileSync(file, 'utf8')));
  const db = new Database(path.join(dir, 'state.db'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT)');
  db.prepare('INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)').run('started', String(Date.now()));
}
