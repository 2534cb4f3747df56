/**
 * Fake Telegram Bot API (channel_e) for grammy 1.46.0 with long polling.
 *
 * Pointing the SDK at it (what an adapter must make configurable):
 *
 *   const tg = await startFakeTelegram();
 *   const { botToken, apiRoot } = tg.channelConfig;          // apiRoot = 'http://127.0.0.1:P' (NO trailing '/')
 *   const bot = new Bot(botToken, { client: { apiRoot } });
 *   bot.on('message', (ctx) => ...);
 *   bot.catch((err) => ...);                                  // middleware errors
 *   const running = bot.start({ timeout: 1 }).catch(...);     // rejects on 401/409: always catch it
 *   await tg.waitForConnection();
 *   ...
 *   await bot.stop();                                         // makes one final getUpdates({offset, limit:1})
 *   await running;
 *   await tg.close();                                         // after the SDK stopped
 *
 * Wire protocol: `POST|GET /bot<token>/<method>` with a JSON, form-urlencoded or multipart body
 * and/or query parameters (method names are case-insensitive); answers `{ok:true,result}` or
 * `{ok:false,error_code,description[,parameters]}`. A wrong token (or refusing) is 401
 * "Unauthorized", an unknown method 404 "Not Found". `getUpdates` is a real long poll: it is held
 * until an update exists or `timeout` seconds pass; `offset` confirms (drops) every update below it,
 * and those confirmations are recorded as acks of the messages. A second poll while one is held
 * ends the held one with 409 "Conflict: terminated by other getUpdates request ...". Files:
 * `getFile` (400 "file is too big" past 20 MB) + `GET /file/bot<token>/<file_path>`; uploads are multipart
 * sendPhoto (10 MB) and sendDocument (50 MB; 413 past it), recorded with `file`. FakeInbound.files
 * arrive as `document` messages.
 *
 * Recording rule: sendMessage/sendPhoto with `reply_parameters.message_id` or `reply_to_message_id`
 * is kind 'reply' (replyTo = that id), otherwise 'send'; editMessageText is 'edit'; sendChatAction
 * is 'typing' (format = the action); sendMessageDraft is 'stream' (finished: false). chatId is the
 * chat id as a decimal string, messageId the message_id as a string, text the plain text after
 * parse_mode parsing (see channel-e-telegram-format.ts), format the parse_mode (or 'plain').
 *
 * Ids: Telegram ids are integers, so FakeInbound.userId / chatId / messageId must be decimal strings
 * (group chats negative, e.g. '-1001234567890'); a DM's chat id is the user id. Integer chat ids are
 * accepted for sends without checking that the chat exists (lenient); anything else is "chat not found".
 * Inline keyboards: `reply_markup.inline_keyboard` buttons with `callback_data` (at most 64 bytes,
 * else 400 "BUTTON_DATA_INVALID") are recorded as `buttons`; `press()` delivers the `callback_query`
 * a click makes, and `answerCallbackQuery` calls are recorded in `callbackAnswers` (an unknown or
 * twice-answered query id is 400 "query is too old ... or query ID is invalid").
 * Rate limits: failNext with retry_after for one 429, after which the method is refused (429 with
 * the time left) until retry_after has passed, as Telegram does; or paceChats for Telegram's
 * per-chat flood control. A call made too early is thus a rejection the test can see. Voice notes (FakeInbound.voice) arrive as `voice` messages (audio/ogg, getFile path
 * voice/…). Not modelled: webhooks, inline mode.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Recorder, closeServer, counter, listen, parseRequest, randomToken, sendJson, type UploadedFile } from './_shared-slack-telegram.js';
import { parseText, type TgEntity } from './channel-e-telegram-format.js';
import type { FakeButton, FakeInbound, FakePlatform, FakePlatformOptions } from './types.js';
import { HANG_MS } from '../../helpers/wait.js';

export const TELEGRAM_TEXT_LIMIT = 4096;
/** What bots may download (getFile) and upload (sendPhoto, sendDocument). */
const DOWNLOAD_MAX_BYTES = 20 * 1024 * 1024;
const PHOTO_MAX_BYTES = 10 * 1024 * 1024;
const DOCUMENT_MAX_BYTES = 50 * 1024 * 1024;

/** The calls Telegram's per-chat flood control counts (paceChats). */
const PACED = new Set(['sendmessage', 'editmessagetext', 'sendmessagedraft', 'sendphoto', 'senddocument']);

type TgMessage = Record<string, unknown> & { message_id: number; chat: { id: number; type: string }; text?: string; entities?: TgEntity[] };
type Update = { update_id: number; message: TgMessage } | { update_id: number; callback_query: Record<string, unknown> & { id: string } };
type Poll = { res: ServerResponse; timer: NodeJS.Timeout | undefined };
type Failure = { error_code: number; description: string; retry_after?: number };

export interface TelegramExtras {
  readonly channelConfig: { botToken: string; apiRoot: string };
  readonly botId: number;
  /** Every Bot API call as received (lower-cased method + merged params). */
  readonly calls: Array<{ method: string; params: Record<string, unknown>; at: number }>;
  /** Updates not yet confirmed by an offset. */
  pendingUpdates(): number;
  /** Held getUpdates polls that ran out their `timeout` (rather than being answered, replaced or closed by the client). */
  expiredPolls(): number;
  /**
   * Make the next call of `method` fail (the next `times` calls; Infinity: until `stopFailing`),
   * e.g. `{error_code: 429, description: 'Too Many Requests: retry after 1', retry_after: 1}`.
   */
  failNext(method: string, failure: Failure, times?: number): void;
  /** The platform answers `method` again. */
  stopFailing(method: string): void;
  /**
   * Telegram's flood control in a chat: a message, edit or draft sooner than `ms` after the last
   * one in the same chat is refused with 429 "Too Many Requests: retry after N" and
   * `parameters.retry_after` (whole seconds, at least 1), as Telegram answers past about one
   * message per second per chat. Off (undefined) by default.
   */
  paceChats(ms: number | undefined): void;
  /** Messages the bot deleted, as `${chatId}:${messageId}`. */
  readonly deleted: string[];
  /**
   * Click a button of a message the bot sent (`chatId`, `messageId` as recorded in outbound), as
   * `userId`: delivers the `callback_query` update. Resolves with the query id once it was fetched,
   * or at once with `delivered: false` when the bot's getUpdates leaves callback queries out.
   */
  press(opts: { chatId: string; messageId: string; label: string; userId: string; userName?: string }): Promise<{ queryId: string; delivered: boolean }>;
  /** answerCallbackQuery calls, in order. */
  readonly callbackAnswers: Array<{ queryId: string; text?: string; at: number }>;
}

const int = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) ? v : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : undefined;
const obj = (v: unknown): Record<string, unknown> | undefined => {
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return undefined;
    }
  }
  return v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
};
const typeOfName = (name: string): string =>
  ({
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    gif: 'image/gif',
    webp: 'image/webp',
    pdf: 'application/pdf',
    txt: 'text/plain',
    csv: 'text/csv',
    zip: 'application/zip',
  })[name.split('.').at(-1)?.toLowerCase() ?? ''] ?? 'application/octet-stream';
const numericId = (v: string | undefined, what: string): number => {
  const n = int(v);
  if (n === undefined) throw new Error(`fake telegram: ${what} must be a decimal integer string, got ${String(v)}`);
  return n;
};

export async function startFakeTelegram(opts: FakePlatformOptions = {}): Promise<FakePlatform & TelegramExtras> {
  const recorder = new Recorder();
  const botId = 123456;
  const token = `${botId}:TEST-${randomToken(30)}`;
  const me = { id: botId, is_bot: true, first_name: 'Service Bot', username: 'service_bot' };
  const nextUpdateId = counter(700_000);
  const nextMessageId = counter(1000);
  let refuse = false;
  let lastPollAt = 0;
  let poll: Poll | undefined;
  let pending: Update[] = [];
  const handed = new Set<number>();
  const messages = new Map<string, TgMessage & { fromBot: boolean }>();
  const delivered = new Map<string, TgMessage[]>();
  const files = new Map<string, { path: string; unique: string; data: Buffer }>();
  const failures = new Map<string, Failure & { left: number }>();
  /** Unix ms until which a method refused with retry_after stays refused. */
  const holds = new Map<string, number>();
  const calls: TelegramExtras['calls'] = [];
  let expired = 0;
  const deleted: string[] = [];
  const callbackAnswers: TelegramExtras['callbackAnswers'] = [];
  const openQueries = new Set<string>();
  const nextQueryId = counter(5_000_000);
  let allowedUpdates: string[] | undefined;
  let chatPace: number | undefined;
  const lastWrite = new Map<number, number>();
  let port = 0;

  const key = (chat: number, id: number) => `${chat}:${id}`;
  const chatOf = (id: number, title?: string, user?: { first_name: string; username?: string }) =>
    id > 0 ? { id, type: 'private', ...user } : { id, type: /^-100\d{10,}$/.test(String(id)) ? 'supergroup' : 'group', title: title ?? `Group ${id}` };

  function addFile(data: Buffer, ext: string, folder = 'photos'): { file_id: string; file_unique_id: string; file_size: number } {
    const file_id = `${folder === 'photos' ? 'AgAC' : folder === 'voice' ? 'AwAC' : 'BQAC'}${randomToken(24)}`;
    const unique = `AQAD${randomToken(10)}`;
    files.set(file_id, { path: `${folder}/file_${files.size}.${ext}`, unique, data });
    return { file_id, file_unique_id: unique, file_size: data.length };
  }

  function answerPoll(p: Poll, status: number, body: unknown): void {
    if (p.timer) clearTimeout(p.timer);
    if (poll === p) poll = undefined;
    lastPollAt = Date.now();
    if (!p.res.writableEnded && !p.res.destroyed) sendJson(p.res, status, body);
  }

  function flushPoll(): void {
    if (!poll || pending.length === 0) return;
    const batch = pending.slice(0, 100);
    for (const u of batch) handed.add(u.update_id);
    answerPoll(poll, 200, { ok: true, result: batch });
    recorder.notify();
  }

  async function hand(updates: Update[]): Promise<void> {
    pending.push(...updates);
    flushPoll();
    await recorder.waitFor(() => (updates.every((u) => handed.has(u.update_id)) ? true : undefined), HANG_MS, 'getUpdates to fetch the update');
  }

  function buildMessages(msg: FakeInbound): TgMessage[] {
    const userId = numericId(msg.userId, 'userId');
    const direct = msg.chatType === 'direct';
    const from = {
      id: userId,
      is_bot: Boolean(msg.fromBot),
      first_name: msg.userName ?? `User ${userId}`,
      ...(msg.userName ? { username: msg.userName } : {}),
      language_code: 'en',
    };
    const chat = chatOf(
      direct ? userId : numericId(msg.chatId, 'chatId'),
      undefined,
      direct ? { first_name: from.first_name, ...(msg.userName ? { username: msg.userName } : {}) } : undefined,
    );
    let text = msg.text;
    const names = [...(!direct && msg.mentionBot ? [me.username] : []), ...(msg.mentionUsers ?? []).map((u) => u.userName)];
    const missing = names.filter((n) => !text.includes(`@${n}`));
    if (missing.length) text = `${missing.map((n) => `@${n}`).join(' ')} ${text}`;
    const entities = names.map((n) => ({ type: 'mention', offset: text.indexOf(`@${n}`), length: n.length + 1 })).sort((a, b) => a.offset - b.offset);
    const date = Math.floor((msg.ts ?? Date.now()) / 1000);
    const firstId = msg.messageId !== undefined ? numericId(msg.messageId, 'messageId') : nextMessageId();
    const base = { from, chat, date, ...(msg.threadId ? { message_thread_id: numericId(msg.threadId, 'threadId'), is_topic_message: true } : {}) };
    const textPart = entities.length ? { entities } : {};
    // One message per photo or document (an album is a media group); the caption goes on the first.
    const attachments: Array<Record<string, unknown>> = [
      ...(msg.images ?? []).map((img) => {
        const ext = img.mimeType.split('/')[1] === 'png' ? 'png' : 'jpg';
        // Telegram sends several sizes, largest last; the fake sends a "thumbnail" and the original (same bytes).
        return {
          photo: [
            { ...addFile(img.data, ext), width: 90, height: 90 },
            { ...addFile(img.data, ext), width: 800, height: 600 },
          ],
        };
      }),
      ...(msg.voice
        ? [
            {
              voice: {
                ...addFile(msg.voice.data, 'oga', 'voice'),
                duration: msg.voice.durationSeconds ?? 3,
                mime_type: msg.voice.mimeType,
              },
            },
          ]
        : []),
      ...(msg.files ?? []).map((f) => ({
        document: {
          ...addFile(f.data, (f.fileName ?? 'file.bin').split('.').at(-1) ?? 'bin', 'documents'),
          file_name: f.fileName ?? 'file',
          mime_type: f.mimeType,
        },
      })),
    ];
    if (attachments.length === 0) return [{ message_id: firstId, ...base, text, ...textPart }];
    const group = attachments.length > 1 ? { media_group_id: randomToken(16) } : {};
    return attachments.map((attachment, i) => {
      const caption = i === 0 && text ? { caption: text, ...(entities.length ? { caption_entities: entities } : {}) } : {};
      return { message_id: i === 0 ? firstId : nextMessageId(), ...base, ...group, ...attachment, ...caption };
    });
  }

  const store = (m: TgMessage, fromBot: boolean) => void messages.set(key(m.chat.id, m.message_id), { ...m, fromBot });

  function call(method: string, p: Record<string, unknown>, upload: UploadedFile[]): { status: number; body: Record<string, unknown> } {
    calls.push({ method, params: p, at: Date.now() });
    const fail = (error_code: number, description: string, parameters?: Record<string, unknown>) => {
      recorder.addRejection(method, description, p);
      return { status: error_code, body: { ok: false, error_code, description, ...(parameters ? { parameters } : {}) } };
    };
    const ok = (result: unknown) => ({ status: 200, body: { ok: true, result } });
    const held = (holds.get(method) ?? 0) - Date.now();
    if (held > 0) {
      const after = Math.ceil(held / 1000);
      return fail(429, `Too Many Requests: retry after ${after}`, { retry_after: after });
    }
    const injected = failures.get(method);
    if (injected) {
      if (--injected.left <= 0) failures.delete(method);
      if (injected.retry_after !== undefined) holds.set(method, Date.now() + injected.retry_after * 1000);
      return fail(injected.error_code, injected.description, injected.retry_after !== undefined ? { retry_after: injected.retry_after } : undefined);
    }
    const chatId = int(p.chat_id);
    if (chatPace !== undefined && chatId !== undefined && PACED.has(method)) {
      const since = Date.now() - (lastWrite.get(chatId) ?? 0);
      if (since < chatPace) {
        const after = Math.max(1, Math.ceil((chatPace - since) / 1000));
        return fail(429, `Too Many Requests: retry after ${after}`, { retry_after: after });
      }
      lastWrite.set(chatId, Date.now());
    }
    const needChat = () => fail(400, 'Bad Request: chat not found');
    const format = typeof p.parse_mode === 'string' && p.parse_mode ? p.parse_mode : 'plain';
    type Body = { error?: ReturnType<typeof fail>; text?: string; entities?: TgEntity[] };
    const parseBody = (field: string, empty: string): Body => {
      const raw = typeof p[field] === 'string' ? (p[field] as string) : '';
      const parsed = parseText(raw, typeof p.parse_mode === 'string' ? p.parse_mode : undefined);
      if (!parsed.ok) return { error: fail(400, parsed.error) };
      if (!parsed.text.trim() && empty) return { error: fail(400, empty) };
      if (parsed.text.length > (field === 'caption' ? 1024 : TELEGRAM_TEXT_LIMIT)) {
        return { error: fail(400, field === 'caption' ? 'Bad Request: message caption is too long' : 'Bad Request: message is too long') };
      }
      const explicit = obj(p[field === 'caption' ? 'caption_entities' : 'entities']);
      return { text: parsed.text, entities: Array.isArray(explicit) ? (explicit as TgEntity[]) : parsed.entities };
    };

    switch (method) {
      case 'getme':
        return ok({
          ...me,
          can_join_groups: true,
          can_read_all_group_messages: false,
          supports_inline_queries: false,
          can_connect_to_business: false,
          has_main_web_app: false,
        });
      case 'deletewebhook':
        if (p.drop_pending_updates === true || p.drop_pending_updates === 'true') pending = [];
        return ok(true);
      case 'getwebhookinfo':
        return ok({ url: '', has_custom_certificate: false, pending_update_count: pending.length });
      case 'setmycommands':
      case 'deletemycommands':
        return ok(true);
      case 'sendmessage':
      case 'sendphoto':
      case 'senddocument': {
        if (chatId === undefined) return needChat();
        const photo = method === 'sendphoto';
        const document = method === 'senddocument';
        const media = photo || document;
        const body = parseBody(media ? 'caption' : 'text', media ? '' : 'Bad Request: message text is empty');
        if (body.error) return body.error;
        const rp = obj(p.reply_parameters);
        const replyId = int(rp?.message_id) ?? int(p.reply_to_message_id);
        const replied = replyId !== undefined ? messages.get(key(chatId as number, replyId)) : undefined;
        if (replyId !== undefined && !replied && rp?.allow_sending_without_reply !== true) return fail(400, 'Bad Request: message to be replied not found');
        let attached: Record<string, unknown> | undefined;
        let sentFile: { name: string; mimeType: string; data: Buffer; as: 'image' | 'file' } | undefined;
        if (media) {
          const field = photo ? 'photo' : 'document';
          const file = upload.find((f) => p[field] === `attach://${f.field}`) ?? upload.find((f) => f.field === field);
          const byId = typeof p[field] === 'string' ? files.get(p[field] as string) : undefined;
          const data = file?.data ?? byId?.data;
          if (!data) return fail(400, `Bad Request: there is no ${field} in the request`);
          if (data.length > (photo ? PHOTO_MAX_BYTES : DOCUMENT_MAX_BYTES)) return fail(413, 'Request Entity Too Large');
          const name = file?.fileName ?? 'file';
          // Telegram types an upload by its name when the part says nothing more than octet-stream.
          const declared = file?.mimeType ?? 'application/octet-stream';
          sentFile = { name, mimeType: declared === 'application/octet-stream' ? typeOfName(name) : declared, data, as: photo ? 'image' : 'file' };
          attached = photo
            ? { photo: [{ ...addFile(data, 'jpg'), width: 800, height: 600 }] }
            : { document: { ...addFile(data, name.split('.').at(-1) ?? 'bin', 'documents'), file_name: name, mime_type: sentFile.mimeType } };
        }
        const keyboard = readKeyboard(p.reply_markup);
        if (typeof keyboard === 'string') return fail(400, keyboard);
        const thread = int(p.message_thread_id);
        const m: TgMessage = {
          message_id: nextMessageId(),
          from: me,
          chat: chatOf(chatId as number),
          date: Math.floor(Date.now() / 1000),
          ...(thread !== undefined ? { message_thread_id: thread } : {}),
          ...(replied ? { reply_to_message: { ...replied, fromBot: undefined } } : {}),
          ...(media ? { ...attached, ...(body.text ? { caption: body.text } : {}) } : { text: body.text }),
          ...(body.entities?.length ? { [media ? 'caption_entities' : 'entities']: body.entities } : {}),
          ...(keyboard ? { reply_markup: obj(p.reply_markup) } : {}),
        };
        store(m, true);
        recorder.addOutbound({
          kind: replyId !== undefined ? 'reply' : 'send',
          chatId: String(chatId),
          text: body.text ?? '',
          format,
          messageId: String(m.message_id),
          ...(replyId !== undefined ? { replyTo: String(replyId) } : {}),
          ...(thread !== undefined ? { threadId: String(thread) } : {}),
          ...(sentFile ? { file: sentFile } : {}),
          ...(keyboard ? { buttons: keyboard } : {}),
          raw: p,
        });
        return ok(JSON.parse(JSON.stringify(m)));
      }
      case 'editmessagetext': {
        const m = chatId !== undefined ? messages.get(key(chatId, int(p.message_id) ?? -1)) : undefined;
        if (!m) return fail(400, 'Bad Request: message to edit not found');
        if (!m.fromBot || m.text === undefined) return fail(400, "Bad Request: message can't be edited");
        const body = parseBody('text', 'Bad Request: message text is empty');
        if (body.error) return body.error;
        if (body.text === m.text && JSON.stringify(body.entities ?? []) === JSON.stringify(m.entities ?? []) && p.reply_markup === undefined) {
          return fail(
            400,
            'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
          );
        }
        m.text = body.text;
        if (body.entities?.length) m.entities = body.entities;
        else delete m.entities;
        m.edit_date = Math.floor(Date.now() / 1000);
        recorder.addOutbound({ kind: 'edit', chatId: String(chatId), text: body.text ?? '', format, messageId: String(m.message_id), raw: p });
        const { fromBot: _f, ...result } = m;
        return ok(result);
      }
      case 'deletemessage': {
        const k = key(chatId ?? 0, int(p.message_id) ?? -1);
        if (!messages.delete(k)) return fail(400, 'Bad Request: message to delete not found');
        deleted.push(k);
        return ok(true);
      }
      case 'sendchataction': {
        if (chatId === undefined) return needChat();
        recorder.addOutbound({ kind: 'typing', chatId: String(chatId), text: '', format: String(p.action ?? ''), raw: p });
        return ok(true);
      }
      case 'sendmessagedraft': {
        // Bot API 9.x: ephemeral draft preview in private chats. The group error text is unverified.
        if (chatId === undefined || chatId <= 0) return fail(400, 'Bad Request: chat not found');
        const body = parseBody('text', 'Bad Request: message text is empty');
        if (body.error) return body.error;
        recorder.addOutbound({
          kind: 'stream',
          chatId: String(chatId),
          text: body.text ?? '',
          format,
          messageId: `draft:${String(p.draft_id)}`,
          finished: false,
          raw: p,
        });
        return ok(true);
      }
      case 'answercallbackquery': {
        const id = typeof p.callback_query_id === 'string' ? p.callback_query_id : String(p.callback_query_id ?? '');
        if (!openQueries.delete(id)) return fail(400, 'Bad Request: query is too old and response timeout expired or query ID is invalid');
        callbackAnswers.push({ queryId: id, ...(typeof p.text === 'string' ? { text: p.text } : {}), at: Date.now() });
        recorder.notify();
        return ok(true);
      }
      case 'getfile': {
        const f = typeof p.file_id === 'string' ? files.get(p.file_id) : undefined;
        if (!f) return fail(400, 'Bad Request: invalid file_id');
        if (f.data.length > DOWNLOAD_MAX_BYTES) return fail(400, 'Bad Request: file is too big');
        return ok({ file_id: p.file_id, file_unique_id: f.unique, file_size: f.data.length, file_path: f.path });
      }
      default:
        return fail(404, 'Not Found');
    }
  }

  function getUpdates(p: Record<string, unknown>, res: ServerResponse): void {
    calls.push({ method: 'getupdates', params: p, at: Date.now() });
    lastPollAt = Date.now();
    const allowed = typeof p.allowed_updates === 'string' ? obj(p.allowed_updates) : p.allowed_updates;
    // An empty or missing list keeps the previous setting, as on Telegram.
    if (Array.isArray(allowed) && allowed.length > 0) allowedUpdates = allowed.map(String);
    const offset = int(p.offset);
    if (offset !== undefined && offset > 0) {
      for (const u of pending) if (u.update_id < offset) recorder.addAck('message' in u ? String(u.message.message_id) : `callback:${u.callback_query.id}`);
      pending = pending.filter((u) => u.update_id >= offset);
    }
    if (poll)
      answerPoll(poll, 409, {
        ok: false,
        error_code: 409,
        description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
      });
    const limit = Math.min(Math.max(int(p.limit) ?? 100, 1), 100);
    const timeout = Math.max(int(p.timeout) ?? 0, 0);
    const p2: Poll = { res, timer: undefined };
    recorder.notify();
    if (pending.length > 0 || timeout === 0) {
      const batch = pending.slice(0, limit);
      for (const u of batch) handed.add(u.update_id);
      sendJson(res, 200, { ok: true, result: batch });
      recorder.notify();
      return;
    }
    poll = p2;
    p2.timer = setTimeout(() => {
      expired++;
      answerPoll(p2, 200, { ok: true, result: [] });
    }, timeout * 1000);
    res.on('close', () => {
      if (poll === p2) {
        clearTimeout(p2.timer);
        poll = undefined;
      }
    });
    recorder.notify();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const file = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (file) {
      const f = [...files.values()].find((x) => x.path === file[2]);
      if (refuse || file[1] !== token) return void sendJson(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
      if (!f) return void sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': f.data.length });
      return void res.end(f.data);
    }
    const m = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!m) return void sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    const { params, files: upload } = await parseRequest(req);
    const method = (m[2] ?? '').toLowerCase();
    if (refuse || m[1] !== token) {
      calls.push({ method, params, at: Date.now() });
      recorder.addRejection(method, 'Unauthorized', params);
      return void sendJson(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    }
    if (method === 'getupdates' && !failures.has(method)) return getUpdates(params, res);
    const r = call(method, params, upload);
    sendJson(res, r.status, r.body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => sendJson(res, 500, { ok: false, error_code: 500, description: `Internal Server Error: ${String(err)}` }));
  });
  port = await listen(server, opts.port ?? 0);

  return {
    name: 'channel_e',
    channelConfig: { botToken: token, apiRoot: `http://127.0.0.1:${port}` },
    botUserId: String(botId),
    botName: me.username,
    limit: { max: TELEGRAM_TEXT_LIMIT, unit: 'chars' },
    botId,
    calls,
    deleted,
    outbound: recorder.outbound,
    rejections: recorder.rejections,
    acks: recorder.acks,
    async deliver(msg) {
      const built = buildMessages(msg);
      for (const m of built) store(m, false);
      const messageId = String(built[0]?.message_id);
      delivered.set(messageId, built);
      await hand(built.map((message) => ({ update_id: nextUpdateId(), message })));
      return { messageId };
    },
    async redeliver(messageId) {
      const built = delivered.get(messageId);
      if (!built) throw new Error(`fake telegram: message ${messageId} was never delivered`);
      // What a client sees after a restart without confirming: the same message under a new update_id.
      await hand(built.map((message) => ({ update_id: nextUpdateId(), message })));
    },
    addHistory(msg) {
      // Telegram has no history API for bots: nothing can read this back. Documented no-op that only
      // allocates a message id (so tests can refer to "a message the bot never saw").
      return { messageId: msg.messageId ?? String(nextMessageId()) };
    },
    waitForOutbound: (pred, timeoutMs) => recorder.waitForOutbound(pred, timeoutMs),
    waitForAck: (messageId, timeoutMs) => recorder.waitForAck(messageId, timeoutMs),
    connected: () => poll !== undefined || Date.now() - lastPollAt < 3000,
    async waitForConnection(timeoutMs = HANG_MS) {
      await recorder.waitFor(() => (poll !== undefined || Date.now() - lastPollAt < 3000 ? true : undefined), timeoutMs, 'a getUpdates poll');
    },
    setRefuseConnections(on) {
      refuse = on;
      // A held poll learns about the revoked token too (grammy's polling loop then throws).
      if (on && poll) answerPoll(poll, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    },
    dropConnections() {
      // Long polling has no persistent session: drop every open HTTP connection (the held poll included).
      // grammy treats it as a network error and polls again after its fixed 3 s back-off.
      if (poll?.timer) clearTimeout(poll.timer);
      poll = undefined;
      server.closeAllConnections();
    },
    callbackAnswers,
    async press({ chatId, messageId, label, userId, userName }) {
      const m = messages.get(key(numericId(chatId, 'chatId'), numericId(messageId, 'messageId')));
      if (!m?.fromBot) throw new Error(`fake telegram: no message ${chatId}:${messageId} from the bot`);
      const keyboard = readKeyboard(m.reply_markup);
      const button = Array.isArray(keyboard) ? keyboard.find((b) => b.label === label) : undefined;
      if (!button) throw new Error(`fake telegram: message ${chatId}:${messageId} has no button "${label}"`);
      const id = String(nextQueryId());
      openQueries.add(id);
      const uid = numericId(userId, 'userId');
      const from = { id: uid, is_bot: false, first_name: userName ?? `User ${uid}`, ...(userName ? { username: userName } : {}), language_code: 'en' };
      const { fromBot: _f, ...message } = m;
      const query = { id, from, message, chat_instance: `-${Math.abs(m.chat.id)}0`, data: button.value };
      // Telegram keeps back update types the bot's last getUpdates did not ask for (allowed_updates).
      if (allowedUpdates && !allowedUpdates.includes('callback_query')) return { queryId: id, delivered: false };
      await hand([{ update_id: nextUpdateId(), callback_query: query }]);
      return { queryId: id, delivered: true };
    },
    pendingUpdates: () => pending.length,
    expiredPolls: () => expired,
    failNext: (method, failure, times = 1) => void failures.set(method.toLowerCase(), { ...failure, left: times }),
    stopFailing: (method) => void failures.delete(method.toLowerCase()),
    paceChats: (ms) => {
      chatPace = ms;
      lastWrite.clear();
    },
    async close() {
      recorder.close();
      if (poll) answerPoll(poll, 200, { ok: true, result: [] });
      await closeServer(server);
    },
  };
}

/** `reply_markup.inline_keyboard` → the buttons it shows (undefined: none; a string: Telegram's refusal). */
function readKeyboard(markup: unknown): FakeButton[] | undefined | string {
  const rows = obj(markup)?.inline_keyboard;
  if (rows === undefined) return undefined;
  if (!Array.isArray(rows) || !rows.every(Array.isArray)) return 'Bad Request: field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays';
  const buttons: FakeButton[] = [];
  for (const b of (rows as unknown[][]).flat() as Array<Record<string, unknown>>) {
    if (typeof b.text !== 'string' || !b.text) return 'Bad Request: text buttons are unallowed in the inline keyboard';
    if (typeof b.callback_data !== 'string' || Buffer.byteLength(b.callback_data) < 1 || Buffer.byteLength(b.callback_data) > 64)
      return 'Bad Request: BUTTON_DATA_INVALID';
    buttons.push({ label: b.text, value: b.callback_data });
  }
  return buttons;
}
