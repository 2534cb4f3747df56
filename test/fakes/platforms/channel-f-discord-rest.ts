/**
 * The fake Discord REST API (v10) for channel-f-discord.ts: the routes a chat adapter uses through
 * discord.js 14 / @discordjs/rest 2.6, with Discord's error bodies ({code, message[, errors]}) and
 * x-ratelimit-* headers that never make @discordjs/rest wait.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  BOT_ID,
  BOT_NAME,
  CHANNEL_TYPE,
  GUILD_ID,
  MAX_CONTENT,
  type FakeChannel,
  type FakeDiscordWorld,
  type StoredMessage,
} from './channel-f-discord-state.js';
import type { FakeButton, FakeImage, FakeOutbound, FakeRejection } from './types.js';

type Json = Record<string, unknown>;

/** An outbound record; DMs also carry the recipient's user id (chatId is the DM channel id). */
export type DiscordOutbound = FakeOutbound & { recipientId?: string };

export interface RestContext {
  world: FakeDiscordWorld;
  token: string;
  isRefused(): boolean;
  gatewayUrl(): string;
  outbound(o: DiscordOutbound): void;
  rejection(r: FakeRejection): void;
  /** Gateway echo of the bot's own writes (Discord sends MESSAGE_CREATE/UPDATE/DELETE for them too). */
  echo(t: 'MESSAGE_CREATE' | 'MESSAGE_UPDATE' | 'MESSAGE_DELETE', m: StoredMessage): void;
  /** POST /interactions/:id/:token/callback (no Authorization: the token in the path is the proof). */
  interactionCallback(id: string, token: string, body: Json): { status: number; body?: unknown };
  /** A refusal queued for the next request of this method and route (failNext), taken once. */
  takeFailure(method: string, route: string): RestFailure | undefined;
}

/**
 * A refusal for the next matching request. With `retryAfter` (seconds) it is Discord's 429: body
 * `{message, retry_after, global}` and the `Retry-After`, `X-RateLimit-Scope` headers, which
 * @discordjs/rest waits out before it sends the request again; the route stays refused until then.
 */
export interface RestFailure {
  method: string;
  /** The route after /api/v10, e.g. /channels/123/messages/456; a RegExp matches any such route. */
  route: string | RegExp;
  status?: number;
  code?: number;
  message?: string;
  retryAfter?: number;
}

/** The buttons of a message's action rows (label, custom_id), where it has any. */
export function componentButtons(components: unknown): FakeButton[] | undefined {
  if (!Array.isArray(components)) return undefined;
  const buttons = (components as Json[])
    .flatMap((row) => (Array.isArray(row.components) ? (row.components as Json[]) : []))
    .filter((c) => c.type === 2)
    .map((c) => ({ label: String(c.label ?? ''), value: String(c.custom_id ?? '') }));
  return buttons.length ? buttons : undefined;
}

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}
interface Req {
  method: string;
  parts: string[];
  query: URLSearchParams;
  body: Json;
  files: FakeImage[];
  route: string;
}

const MAX_BODY = 25 * 1024 * 1024;
/** Per attachment, for a bot in a server without boosts (10 MiB since 2024). */
const MAX_ATTACHMENT = 10 * 1024 * 1024;

/** Discord types an upload by its name when the part carries no type. */
function typeOfName(name: string): string {
  const ext = name.split('.').at(-1)?.toLowerCase() ?? '';
  return (
    {
      png: 'image/png',
      jpg: 'image/jpeg',
      jpeg: 'image/jpeg',
      gif: 'image/gif',
      webp: 'image/webp',
      pdf: 'application/pdf',
      txt: 'text/plain',
      csv: 'text/csv',
    }[ext] ?? 'application/octet-stream'
  );
}

function error(status: number, code: number, message: string, errors?: Json): Reply {
  return { status, body: { message, code, ...(errors ? { errors } : {}) } };
}

function formError(field: string[], code: string, message: string): Reply {
  const errors: Json = {};
  let node = errors;
  for (const key of field) node = (node[key] = {}) as Json;
  node._errors = [{ code, message }];
  return error(400, 50035, 'Invalid Form Body', errors);
}

function lengthOf(text: string): number {
  return [...text].length; // Discord counts characters (code points), not UTF-16 units
}

export function createRestHandler(ctx: RestContext) {
  const { world } = ctx;

  function reject(req: Req, reason: string, reply: Reply): Reply {
    ctx.rejection({ method: `${req.method} ${req.route}`, reason, raw: req.body, at: Date.now() });
    return reply;
  }

  function where(c: FakeChannel): { chatId: string; threadId?: string; recipientId?: string } {
    if (c.type === CHANNEL_TYPE.PublicThread) return { chatId: c.parentId ?? c.id, threadId: c.id };
    if (c.type === CHANNEL_TYPE.DM) return { chatId: c.id, ...(c.recipientId ? { recipientId: c.recipientId } : {}) };
    return { chatId: c.id };
  }

  function textOf(body: Json): string {
    if (typeof body.content === 'string' && body.content) return body.content;
    const embeds = Array.isArray(body.embeds) ? (body.embeds as Json[]) : [];
    return embeds.map((e) => [e.title, e.description].filter(Boolean).join('\n')).join('\n');
  }

  function validateText(req: Req): Reply | undefined {
    const { content, embeds } = req.body;
    if (typeof content === 'string' && lengthOf(content) > MAX_CONTENT) {
      return reject(
        req,
        `content longer than ${MAX_CONTENT} characters (${lengthOf(content)})`,
        formError(['content'], 'BASE_TYPE_MAX_LENGTH', `Must be ${MAX_CONTENT} or fewer in length.`),
      );
    }
    const list = Array.isArray(embeds) ? (embeds as Json[]) : [];
    const long = list.findIndex((e) => typeof e.description === 'string' && lengthOf(e.description) > 4096);
    if (long >= 0) {
      return reject(
        req,
        'embed description longer than 4096 characters',
        formError(['embeds', String(long), 'description'], 'BASE_TYPE_MAX_LENGTH', 'Must be 4096 or fewer in length.'),
      );
    }
    return undefined;
  }

  function createMessage(req: Req, channel: FakeChannel): Reply {
    const invalid = validateText(req);
    if (invalid) return invalid;
    const { body } = req;
    const hasEmbeds = Array.isArray(body.embeds) && body.embeds.length > 0;
    if (!body.content && !hasEmbeds && req.files.length === 0 && !body.sticker_ids && !body.components) {
      return reject(req, 'empty message', error(400, 50006, 'Cannot send an empty message'));
    }
    const ref = body.message_reference as Json | undefined;
    const refId = ref?.message_id === undefined ? undefined : String(ref.message_id);
    const refFound = refId !== undefined && world.messages.get(refId)?.channel.id === channel.id;
    if (refId !== undefined && !refFound && ref?.fail_if_not_exists !== false) {
      return reject(req, `reply to unknown message ${refId}`, formError(['message_reference'], 'MESSAGE_REFERENCE_UNKNOWN_MESSAGE', 'Unknown message'));
    }
    const big = req.files.find((f) => f.data.length > MAX_ATTACHMENT);
    if (big) return reject(req, `attachment ${big.fileName ?? ''} over ${MAX_ATTACHMENT} bytes`, error(413, 40005, 'Request entity too large'));
    const files = req.files.map((f) => (f.mimeType === 'application/octet-stream' ? { ...f, mimeType: typeOfName(f.fileName ?? '') } : f));
    const buttons = componentButtons(body.components);
    const badButton = buttons?.find((b) => !b.label || b.label.length > 80 || !b.value || b.value.length > 100);
    if (badButton) return reject(req, 'invalid button', formError(['components'], 'BASE_TYPE_MAX_LENGTH', 'Invalid button label or custom_id.'));
    const stored = world.storeBotMessage(channel, body, files);
    const id = String(stored.payload.id);
    const first = files[0];
    ctx.outbound({
      kind: refFound ? 'reply' : 'send',
      ...where(channel),
      text: textOf(body),
      format: 'markdown',
      messageId: id,
      ...(refFound ? { replyTo: refId } : {}),
      ...(first
        ? { file: { name: first.fileName ?? 'file', mimeType: first.mimeType, data: first.data, as: first.mimeType.startsWith('image/') ? 'image' : 'file' } }
        : {}),
      ...(buttons ? { buttons } : {}),
      raw: req.files.length ? { ...body, files: req.files } : body,
      at: Date.now(),
    });
    ctx.echo('MESSAGE_CREATE', stored);
    return { status: 200, body: stored.payload };
  }

  function editMessage(req: Req, channel: FakeChannel, messageId: string): Reply {
    const stored = world.messages.get(messageId);
    if (!stored || stored.channel.id !== channel.id) return reject(req, 'unknown message', error(404, 10008, 'Unknown Message'));
    if (!stored.fromBot) {
      return reject(req, 'not the author', error(403, 50005, 'Cannot edit a message authored by another user'));
    }
    const invalid = validateText(req);
    if (invalid) return invalid;
    const { body } = req;
    if (typeof body.content === 'string') stored.payload.content = body.content;
    if (Array.isArray(body.embeds)) stored.payload.embeds = body.embeds;
    stored.payload.edited_timestamp = new Date().toISOString();
    ctx.outbound({
      kind: 'edit',
      ...where(channel),
      text: textOf(stored.payload),
      format: 'markdown',
      messageId,
      raw: body,
      at: Date.now(),
    });
    ctx.echo('MESSAGE_UPDATE', stored);
    return { status: 200, body: stored.payload };
  }

  function channelRoutes(req: Req): Reply {
    const [, channelId = '', sub, messageId, extra] = req.parts;
    const channel = world.channels.get(channelId);
    if (!channel) return reject(req, 'unknown channel', error(404, 10003, 'Unknown Channel'));
    const m = req.method;
    if (sub === undefined && m === 'GET') return { status: 200, body: world.channelPayload(channel) };
    if (sub === 'typing' && m === 'POST') {
      ctx.outbound({ kind: 'typing', ...where(channel), text: '', raw: req.body, at: Date.now() });
      return { status: 204 };
    }
    if (sub !== 'messages' || extra !== undefined) return notFound(req);
    if (messageId === undefined) {
      if (m === 'POST') return createMessage(req, channel);
      if (m !== 'GET') return notFound(req);
      const limit = Number(req.query.get('limit') ?? 50);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
        return reject(req, 'bad limit', formError(['limit'], 'NUMBER_TYPE_MAX', 'int value should be less than or equal to 100.'));
      }
      return { status: 200, body: world.history(channel.id, req.query) };
    }
    if (m === 'PATCH') return editMessage(req, channel, messageId);
    const stored = world.messages.get(messageId);
    if (!stored || stored.channel.id !== channel.id) return reject(req, 'unknown message', error(404, 10008, 'Unknown Message'));
    if (m === 'GET') return { status: 200, body: stored.payload };
    if (m === 'DELETE') {
      world.messages.delete(messageId);
      ctx.echo('MESSAGE_DELETE', stored);
      return { status: 204 };
    }
    return notFound(req);
  }

  function notFound(req: Req): Reply {
    return reject(req, 'route not implemented by the fake', error(404, 0, '404: Not Found'));
  }

  function route(req: Req): Reply {
    const [head, second] = req.parts;
    const key = `${req.method} ${req.parts.join('/')}`;
    if (key === 'GET gateway') return { status: 200, body: { url: ctx.gatewayUrl() } };
    if (ctx.isRefused()) return reject(req, 'refusing connections', error(401, 0, '401: Unauthorized'));
    if (key === 'GET gateway/bot') {
      return {
        status: 200,
        body: {
          url: ctx.gatewayUrl(),
          shards: 1,
          session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
        },
      };
    }
    if (key === 'GET users/@me') {
      return { status: 200, body: { ...world.userPayload(world.botUser()), verified: true, mfa_enabled: false, email: null } };
    }
    if (key === 'GET applications/@me' || key === 'GET oauth2/applications/@me') {
      return {
        status: 200,
        body: { id: BOT_ID, name: BOT_NAME, flags: 1 << 19, bot_public: true, bot_require_code_grant: false, bot: world.userPayload(world.botUser()) },
      };
    }
    if (key === 'POST users/@me/channels') {
      const recipient = String(req.body.recipient_id ?? '');
      if (!/^\d{1,20}$/.test(recipient))
        return reject(req, 'bad recipient_id', formError(['recipient_id'], 'NUMBER_TYPE_COERCE', `Value "${recipient}" is not snowflake.`));
      return { status: 200, body: world.channelPayload(world.dmChannelFor(recipient)) };
    }
    if (head === 'users' && second && req.parts.length === 2 && req.method === 'GET') {
      const user = world.users.get(second);
      return user ? { status: 200, body: world.userPayload(user) } : reject(req, 'unknown user', error(404, 10013, 'Unknown User'));
    }
    if (head === 'guilds' && second === GUILD_ID && req.parts.length === 2 && req.method === 'GET') {
      return { status: 200, body: world.guildCreatePayload() };
    }
    if (head === 'channels' && second) return channelRoutes(req);
    return notFound(req);
  }

  function serveAttachment(res: ServerResponse, path: string[]): void {
    const file = world.files.get(path[2] ?? '');
    if (!file) return void send(res, { status: 404, body: { message: '404: Not Found', code: 0 } });
    res.writeHead(200, { 'content-type': file.mimeType, 'content-length': file.data.length });
    res.end(file.data);
  }

  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (path[0] === 'attachments') return serveAttachment(res, path);
    if (path[0] !== 'api' || path[1] !== 'v10') return send(res, { status: 404, body: { message: '404: Not Found', code: 0 } });
    const parts = path.slice(2);
    const method = req.method ?? 'GET';
    let parsed: { body: Json; files: FakeImage[] };
    try {
      parsed = await readBody(req);
    } catch {
      return send(res, error(400, 50109, 'The request body contains invalid JSON.'));
    }
    const r: Req = { method, parts, query: url.searchParams, ...parsed, route: `/${parts.join('/')}` };
    if (method === 'POST' && parts[0] === 'interactions' && parts[3] === 'callback' && parts.length === 4) {
      return send(res, ctx.interactionCallback(parts[1] ?? '', parts[2] ?? '', parsed.body), parts);
    }
    const failure = ctx.takeFailure(method, r.route);
    if (failure) return send(res, reject(r, failure.retryAfter !== undefined ? 'rate limited' : (failure.message ?? 'refused'), refusal(failure)), parts);
    const authorized = req.headers.authorization === `Bot ${ctx.token}`;
    const open = method === 'GET' && parts.join('/') === 'gateway';
    if (!authorized && !open) return send(res, reject(r, 'bad or missing Authorization header', error(401, 0, '401: Unauthorized')), parts);
    return send(res, route(r), parts);
  };
}

// --- internal ---

function refusal(f: RestFailure): Reply {
  if (f.retryAfter === undefined) return error(f.status ?? 400, f.code ?? 0, f.message ?? 'Refused');
  const after = String(f.retryAfter);
  return {
    status: 429,
    body: { message: 'You are being rate limited.', retry_after: f.retryAfter, global: false },
    headers: { 'retry-after': after, 'x-ratelimit-scope': 'user', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset-after': after },
  };
}

function send(res: ServerResponse, reply: Reply, parts: string[] = []): void {
  // Generous limits that never reach 0, so @discordjs/rest never sleeps on a bucket.
  const bucket =
    Buffer.from(`${parts[0] ?? ''}/${parts[1] ?? ''}`)
      .toString('hex')
      .slice(0, 32) || 'global';
  const headers: Record<string, string | number> = {
    'x-ratelimit-limit': 50,
    'x-ratelimit-remaining': 49,
    'x-ratelimit-reset': (Date.now() / 1000 + 1).toFixed(3),
    'x-ratelimit-reset-after': '1.000',
    'x-ratelimit-bucket': bucket,
    ...reply.headers,
  };
  if (reply.body === undefined) {
    res.writeHead(reply.status, headers);
    return void res.end();
  }
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<{ body: Json; files: FakeImage[] }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  const data = Buffer.concat(chunks);
  const type = req.headers['content-type'] ?? '';
  if (data.length === 0) return { body: {}, files: [] };
  if (type.startsWith('multipart/form-data')) {
    // @discordjs/rest uploads files as files[n] parts with the JSON body in payload_json.
    const form = await new Response(data, { headers: { 'content-type': type } }).formData();
    const files: FakeImage[] = [];
    let body: Json = {};
    for (const [name, value] of form.entries()) {
      if (name === 'payload_json' && typeof value === 'string') body = JSON.parse(value) as Json;
      else if (typeof value !== 'string') {
        files.push({ mimeType: value.type || 'application/octet-stream', data: Buffer.from(await value.arrayBuffer()), fileName: value.name });
      }
    }
    return { body, files };
  }
  return { body: JSON.parse(data.toString('utf8')) as Json, files: [] };
}
