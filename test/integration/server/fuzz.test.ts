import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { parseSseStrict } from '../../helpers/server.js';
import { createStandIn } from '../../helpers/stand-in.js';

/**
 * Issue 12: a property-based fuzz of the whole HTTP API against one real `service gateway`
 * process (the stand-in engine on PATH, secrets in service.yaml in several places: literal
 * secret fields, placeholders in arrays, URLs and names, a disabled channel). Random and
 * malformed methods, paths, headers and bodies over every route, bounded in count and time.
 * After every request: no 5xx except where documented, every error is a JSON `{error}`, no
 * secret in any response, service.yaml byte-identical after a rejected PATCH, the process alive.
 */
const TOKEN = 'tok-fuzz-literal-0123456789';
const ENV: Record<string, string> = {
  PROVIDER_API_KEY: 'sk-fuzz-provider-0123456789',
  BASE_URL_KEY: 'fuzz-baseurl-secret-1111',
  MCP_ARG_KEY: 'fuzz-mcp-arg-secret-2222',
  MCP_URL_KEY: 'fuzz-mcp-url-secret-3333',
  MCP_ENV_TOKEN: 'fuzz-mcp-env-secret-4444',
  MCP_HEADER: 'fuzz-mcp-header-secret-5555',
  BOT_SUFFIX: 'fuzz-suffix-secret-6666',
  GITHUB_TOKEN: 'fuzz-inherited-secret-7777',
};
const LITERALS = [TOKEN, 'fuzz-oauth-literal-8888', 'fuzz-lark-literal-9999'];
const SECRETS = [...Object.values(ENV), ...LITERALS];
const YAML = `name: fuzz-\${BOT_SUFFIX}
engine: engine_b
oauthToken: ${LITERALS[1]}
gateway:
  token: ${TOKEN}
provider:
  baseUrl: http://127.0.0.1:9/v1?key=\${BASE_URL_KEY}
  apiKey: \${PROVIDER_API_KEY}
mcp:
  files:
    command: node
    args: ["server.js", "--key", "\${MCP_ARG_KEY}"]
    env:
      API_TOKEN: \${MCP_ENV_TOKEN}
  remote:
    type: http
    url: http://127.0.0.1:9/mcp?key=\${MCP_URL_KEY}
    headers:
      Authorization: Bearer \${MCP_HEADER}
channels:
  channel_a:
    appId: \${UNSET_LARK_APP_ID}
    appSecret: ${LITERALS[2]}
`;

/** 5xx answers the API documents (docs/api.md): /api/send's platform and availability errors, the subscriber limit, a failed or aborted OpenAI-compatible turn. */
const DOCUMENTED_5XX: Record<string, number[]> = { '/api/send': [501, 502, 503], '/api/events': [503], '/v1/chat/completions': [502, 503] };

let g: GatewayProcess;
let root: string;
let yamlFile: string;
beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-fuzz-'));
  const standIn = createStandIn(path.join(root, 'stand-in'));
  const dir = path.join(root, 'assistant');
  fs.mkdirSync(dir);
  yamlFile = path.join(dir, 'service.yaml');
  fs.writeFileSync(yamlFile, YAML);
  g = await startGatewayProcess(dir, [], { ...standIn.env, ...ENV, SERVICE_TOKEN: '', SERVICE_LOG_LEVEL: 'info' });
});
afterAll(async () => {
  await g?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

// --- arbitraries ---

const ROUTES = [
  '/chat',
  '/command',
  '/reset',
  '/abort',
  '/approve',
  '/health',
  '/',
  '/index.html',
  '/dashboard/dashboard.js',
  '/dashboard/vendor/marked.js',
  '/api/status',
  '/api/config',
  '/api/config/effective',
  '/api/channels',
  '/api/send',
  '/api/events',
  '/api/metrics/timeline',
  '/api/escalations',
  '/api/fleet',
  '/api/sessions',
  '/api/sessions/default/history',
  '/v1/chat/completions',
  '/v1/models',
];
const ATTACKS = [
  '\u0000',
  'a\u0000b',
  '\nFORGED line',
  '\r\nFORGED',
  '\u001b[2J',
  '\u2028',
  '${PROVIDER_API_KEY}',
  'bot-${MCP_URL_KEY}',
  '${GITHUB_TOKEN}',
  '${HOME}',
  '********',
  'x ******** y',
  '__proto__',
  'constructor',
  'prototype',
  '/etc/passwd',
  '../../package.json',
  '%00',
  '%0aFORGED',
  '%',
  '%E0%A4%A',
  '😀',
  '\ud800',
  '',
  ' ',
  '/status',
  '/model list',
  '/cron list',
  '/reset',
  'SAY:hello',
  'FAIL:boom',
  'CRASH',
  'EMPTY',
];
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 3, arbitrary: fc.constantFrom(...ATTACKS) },
  { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 10 }), fc.constantFrom(...ATTACKS)).map(([a, b]) => a + b) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
);
const scalar = fc.oneof(text, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const key = fc.oneof(text, fc.constantFrom('message', 'sessionKey', 'images', 'command', 'arguments', 'channel', 'chatId', 'text', 'x-ext', '__proto__'));
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(key, tie('v'), { maxKeys: 4 })),
})).v;

const image = fc.record(
  {
    data: fc.oneof(fc.constant('iVBORw0KGgo='), text),
    mimeType: fc.oneof(fc.constantFrom('image/png', 'image/jpeg', 'application/pdf'), text),
    fileName: text,
  },
  { requiredKeys: [] },
);
const chatBody = fc.record(
  { message: fc.oneof(text, scalar), sessionKey: fc.oneof(text, scalar), images: fc.oneof(fc.array(image, { maxLength: 6 }), value) },
  { requiredKeys: [] },
);
const commandBody = fc.record({ command: fc.oneof(text, scalar), arguments: fc.oneof(text, scalar), sessionKey: text }, { requiredKeys: [] });
const sendBody = fc.record(
  { channel: fc.oneof(fc.constantFrom('channel_a', 'channel_e'), text), chatId: text, text: fc.oneof(text, scalar) },
  { requiredKeys: [] },
);
const configBody = fc.record(
  {
    name: fc.oneof(text, scalar),
    model: fc.oneof(text, scalar),
    timeout: fc.oneof(fc.integer({ min: -5, max: 5000 }), scalar),
    maxConcurrent: fc.oneof(fc.integer({ min: -1, max: 50 }), scalar),
    persona: fc.oneof(text, value),
    systemPrompt: fc.oneof(text, scalar),
    streaming: fc.oneof(fc.record({ mode: fc.constantFrom('buffered', 'streaming', 'x') }), value),
    groupChat: fc.oneof(
      fc.record({ groupPolicy: fc.constantFrom('mention-only', 'smart', 'always', 'all'), historyLimit: fc.integer() }, { requiredKeys: [] }),
      value,
    ),
    mcp: fc.oneof(
      fc.record({
        files: fc.record({ command: text, args: fc.array(text, { maxLength: 4 }), env: fc.dictionary(text, text, { maxKeys: 2 }) }, { requiredKeys: [] }),
      }),
      fc.record({
        remote: fc.record({ type: fc.constantFrom('http', 'sse'), url: text, headers: fc.dictionary(text, text, { maxKeys: 2 }) }, { requiredKeys: [] }),
      }),
      value,
    ),
    provider: fc.oneof(fc.record({ baseUrl: text, apiKey: text, model: text }, { requiredKeys: [] }), value),
    channels: fc.oneof(fc.dictionary(fc.constantFrom('channel_e', 'custom', '__proto__'), value, { maxKeys: 2 }), value),
    gateway: fc.oneof(fc.record({ port: fc.integer(), host: text }, { requiredKeys: [] }), value),
    'x-ext': value,
  },
  { requiredKeys: [] },
);
/** Bodies as text: valid JSON of every route's shape, random JSON, and text that is not JSON at all. */
const deep = fc
  .tuple(fc.integer({ min: 20, max: 3000 }), fc.constantFrom('{"a":', '[', '{"__proto__":'))
  .map(([n, open]) => `${open.repeat(n)}1${(open === '[' ? ']' : '}').repeat(n)}`);
/** Bodies each route accepts, with an attack string now and then: they reach the engine and the file. */
const word = fc.stringMatching(/^[A-Za-z0-9 ._-]{1,20}$/);
const PLAUSIBLE: Record<string, fc.Arbitrary<unknown>> = {
  '/chat': fc.record(
    {
      message: fc.oneof(
        word,
        word.map((w) => `SAY:${w}`),
        fc.constantFrom('FAIL:x', 'CRASH', 'EMPTY', '/status', '/model list', '/cron list'),
      ),
      sessionKey: word,
    },
    { requiredKeys: ['message'] },
  ),
  '/command': fc.record({ command: word, arguments: word, sessionKey: word }, { requiredKeys: ['command'] }),
  '/reset': fc.record({ sessionKey: word }),
  '/abort': fc.record({ sessionKey: word }, { requiredKeys: [] }),
  '/approve': fc.record(
    { sessionKey: word, id: word, decision: fc.constantFrom('allow', 'deny', 'allow_always', 'maybe') },
    { requiredKeys: ['id', 'decision'] },
  ),
  '/api/send': fc.record({ channel: fc.constantFrom('channel_a', 'channel_e', 'nope'), chatId: word, text: word }),
  '/api/config': fc.oneof(
    fc.record({ timeout: fc.integer({ min: 1, max: 600 }) }),
    fc.record({ name: fc.oneof(word, fc.constantFrom('bot-${PROVIDER_API_KEY}', 'fuzz-${BOT_SUFFIX}')) }),
    fc.record({ persona: fc.oneof(word, text) }),
    fc.record({ systemPrompt: fc.oneof(word, text) }),
    fc.record({ maxConcurrent: fc.integer({ min: 1, max: 20 }) }),
    fc.record({ 'x-ext': fc.oneof(word, value) }),
    fc.record({ mcp: fc.record({ files: fc.record({ args: fc.array(fc.oneof(word, fc.constantFrom('${MCP_ARG_KEY}', '********')), { maxLength: 4 }) }) }) }),
    fc.record({
      mcp: fc.record({ files: fc.record({ env: fc.dictionary(fc.stringMatching(/^[A-Z_]{1,8}$/), fc.constantFrom('${PROVIDER_API_KEY}', '********', 'v')) }) }),
    }),
    fc.record({
      mcp: fc.record({ remote: fc.record({ url: fc.constantFrom('http://127.0.0.1:9/mcp?key=${MCP_URL_KEY}', 'http://127.0.0.1:9/mcp?key=********') }) }),
    }),
    fc.record({ provider: fc.record({ apiKey: fc.constantFrom('${PROVIDER_API_KEY}', '********', '${GITHUB_TOKEN}') }) }),
  ),
};
const bodyText = fc.oneof(
  { weight: 4, arbitrary: fc.oneof(chatBody, commandBody, sendBody, configBody, fc.record({ sessionKey: text })).map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: value.map((v) => JSON.stringify(v) ?? 'null') },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: fc.constantFrom('{"mcp":{"__proto__":{"command":"node"}}}', '{"channels":{"__proto__":{}}}', '{"constructor":{"prototype":{}}}') },
  { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('', '{', '{"message":', 'null', '[]', '"x"', '{"message":"\\ud800"}')) },
  { weight: 1, arbitrary: fc.constant(undefined) },
);
const authHeader = fc.oneof(
  { weight: 12, arbitrary: fc.constant(`Bearer ${TOKEN}`) },
  { weight: 1, arbitrary: fc.constantFrom(undefined, 'Bearer', 'Bearer wrong-token', `bearer ${TOKEN}`, `Basic ${TOKEN}`, `Bearer ${TOKEN} extra`) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 30 }) },
);
const pathArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...ROUTES) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom(...ROUTES),
        fc.constantFrom('', '/', '?', '?range=1h', '?range=1y', '?limit=x', '?limit=-5', `?token=${TOKEN}`, '/x', '%2F..%2F..'),
        text,
      )
      .map(([r, s, t]) => r + s + encodeSafely(t)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '/dashboard/%',
      '/dashboard/x%0aFORGED',
      '/dashboard/..%2F..%2Fpackage.json',
      '/%00',
      '//',
      '/api',
      '/api/',
      '/chat/',
      '/api/sessions/%zz/history',
      '/api/sessions/%E0%A4%A/history',
      '/api/sessions//history',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 30 }).map((s) => `/${encodeURI(s)}`) },
);
/** encodeURIComponent throws on a lone surrogate; such a path is sent as its (invalid) UTF-8 bytes. */
function encodeSafely(t: string): string {
  try {
    return encodeURIComponent(t);
  } catch {
    return '%ED%A0%80';
  }
}
/** Each route with its own method most of the time (so bodies reach validation), anything with anything otherwise. */
const ROUTE_METHODS: Array<[string, string]> = [
  ['POST', '/chat'],
  ['POST', '/chat'],
  ['POST', '/command'],
  ['POST', '/reset'],
  ['POST', '/abort'],
  ['POST', '/approve'],
  ['POST', '/api/send'],
  ['PATCH', '/api/config'],
  ['PATCH', '/api/config'],
  ['PATCH', '/api/config'],
  ['GET', '/api/status'],
  ['GET', '/api/config'],
  ['GET', '/api/config/effective'],
  ['GET', '/health'],
  ['GET', '/api/escalations'],
  ['GET', '/api/metrics/timeline'],
  ['GET', '/api/events'],
];
const target = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(...ROUTE_METHODS).chain(([method, path]) => {
      const fit = PLAUSIBLE[path];
      const body = fit ? fc.oneof({ weight: 2, arbitrary: fit.map((b) => JSON.stringify(b)) }, { weight: 1, arbitrary: bodyText }) : fc.constant(undefined);
      return body.map((b) => ({ method, path, body: b }));
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      method: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'PATCH') },
        { weight: 2, arbitrary: fc.constantFrom('DELETE', 'PUT', 'HEAD', 'OPTIONS', 'FROB') },
      ),
      path: pathArb,
      body: bodyText,
    }),
  },
);
const request = fc.record({
  target,
  auth: authHeader,
  contentType: fc.constantFrom(undefined, 'application/json', 'text/plain', 'application/json; charset=latin1', 'multipart/form-data'),
  origin: fc.constantFrom(undefined, 'http://evil.test'),
});
type FuzzRequest = Omit<typeof request extends fc.Arbitrary<infer R> ? R : never, 'target'> & { method: string; path: string; body: string | undefined };

// --- the client ---

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** node:http rather than fetch: any method token, any header value a socket can carry. */
function send(req: FuzzRequest): Promise<Answer | undefined> {
  const url = new URL(g.url);
  const headers: Record<string, string> = {};
  if (req.auth !== undefined) headers.authorization = req.auth;
  if (req.contentType !== undefined) headers['content-type'] = req.contentType;
  if (req.origin !== undefined) headers.origin = req.origin;
  if (req.method === 'OPTIONS' && req.origin) headers['access-control-request-method'] = 'POST';
  const body = req.body === undefined ? undefined : Buffer.from(req.body);
  if (body) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    let r: http.ClientRequest;
    try {
      r = http.request({ host: url.hostname, port: url.port, method: req.method, path: req.path, headers }, (res) => {
        const chunks: Buffer[] = [];
        // The activity feed never ends by itself: its headers are the answer.
        if (String(res.headers['content-type']).includes('text/event-stream') && req.path.startsWith('/api/events')) {
          res.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
          return;
        }
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
    } catch {
      resolve(undefined); // a header or path the client library itself refuses to send
      return;
    }
    r.setTimeout(30_000, () => r.destroy(new Error(`no answer to ${req.method} ${req.path}`)));
    r.on('error', reject);
    r.end(body);
  });
}

function routeOf(p: string): string {
  return p.split('?')[0] ?? p;
}

async function check(req: FuzzRequest): Promise<void> {
  const before = fs.readFileSync(yamlFile);
  const answer = await send(req);
  expect(g.child.exitCode, 'the gateway process is alive').toBeNull();
  if (!answer) return;
  const where = `${req.method} ${req.path} → ${answer.status} ${answer.body.slice(0, 200)}`;
  if (answer.status >= 500) expect(DOCUMENTED_5XX[routeOf(req.path)] ?? [], where).toContain(answer.status);
  const type = String(answer.headers['content-type'] ?? '');
  // Under /v1/ (the OpenAI-compatible routes) errors are OpenAI's `{error: {message, …}}` and streams end with `data: [DONE]`.
  const openAi = routeOf(req.path).startsWith('/v1/');
  if (answer.status >= 400 && req.method !== 'HEAD') {
    expect(type, where).toContain('application/json');
    const parsed = JSON.parse(answer.body) as { error?: { message?: unknown } | string };
    // A request Node's HTTP parser refuses (an unknown method) never reaches the app: our shape, wherever it was sent.
    const refusedByParser = typeof parsed.error === 'string' && parsed.error.startsWith('malformed HTTP request');
    if (openAi && !refusedByParser) expect(typeof (parsed.error as { message?: unknown } | undefined)?.message, where).toBe('string');
    else expect(typeof parsed.error, where).toBe('string');
  } else if (type.includes('application/json') && req.method !== 'HEAD') {
    expect(() => JSON.parse(answer.body), where).not.toThrow();
  } else if (type.includes('text/event-stream') && answer.body !== '' && openAi) {
    expect(answer.body.endsWith('data: [DONE]\n\n'), where).toBe(true);
  } else if (type.includes('text/event-stream') && answer.body !== '') {
    const events = parseSseStrict(answer.body) as Array<{ type: string }>;
    expect(events.at(-1)?.type, where).toBe('completion');
  }
  const everything = `${JSON.stringify(answer.headers)}\n${answer.body}`;
  for (const secret of SECRETS) expect(everything.includes(secret), `${where} leaks a secret`).toBe(false);
  const after = fs.readFileSync(yamlFile);
  if (req.method === 'PATCH' && answer.status !== 200) expect(after.equals(before), `${where}: service.yaml changed`).toBe(true);
  for (const secret of Object.values(ENV)) expect(after.includes(secret), `${where}: a resolved secret was written`).toBe(false);
}

describe('HTTP API fuzz (one real gateway process)', () => {
  it('random and malformed requests over every route: no undocumented 5xx, JSON errors, no secret out, yaml intact, process alive', async () => {
    const flat = request.map(({ target: t, ...rest }) => ({ ...rest, ...t }));
    // Bounded in count and time; FUZZ_RUNS=5000 searches longer. A failure prints its seed (FUZZ_SEED=<seed> replays it) and the shrunk request.
    const numRuns = Number(process.env.FUZZ_RUNS ?? 600);
    const seed = process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {};
    await fc.assert(fc.asyncProperty(flat, check), { numRuns, interruptAfterTimeLimit: 40_000, markInterruptAsFailure: false, ...seed });
    // Afterwards: still serving, and the log neither leaked a secret nor took a forged line.
    expect((await fetch(`${g.url}/health`)).status).toBe(200);
    const log = g.output();
    for (const secret of SECRETS) expect(log.includes(secret), `the log leaks ${secret}`).toBe(false);
    expect(log.split('\n').filter((l) => l.startsWith('FORGED'))).toEqual([]);
    expect(log).not.toContain('Maximum call stack');
    expect(log).not.toContain('This is a bug');
  });
});
