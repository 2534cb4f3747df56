/**
 * The fake Lark OpenAPI (REST). Every call except the token endpoints needs `Authorization: Bearer t-…`
 * issued by this fake. Success is HTTP 200 `{code:0, msg:'success', data}`; errors are HTTP 400
 * `{code, msg, data:{}}` (axios, and so the SDK, throws; the code is at `err.response.data.code`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseMultipartParts } from './_shared-slack-telegram.js';
import type { FakeOutbound } from './types.js';
import { ERR, LarkError, hex, newCardId, newMessageId, newThreadId, type LarkState, type StoredMessage } from './channel-a-lark-state.js';
import {
  CARD_MAX_BYTES,
  ELEMENT_MAX_CHARS,
  MAX_EDITS,
  STREAMING_MAX_MS,
  cardButtons,
  cardText,
  decodeContent,
  elementIds,
  findElement,
  maxBytesFor,
  parseJson,
  postBody,
} from './channel-a-lark-content.js';

type Json = Record<string, unknown>;
interface Ctx {
  s: LarkState;
  p: string[];
  q: Record<string, string>;
  body: Json;
  /** multipart/form-data bodies (uploads): every part's bytes, by field name. */
  parts: Map<string, { data: Buffer; fileName?: string; type: string }>;
  res: ServerResponse;
}
/** Returns the JSON to send (200), or undefined when it wrote the response itself. */
type Handler = (c: Ctx) => Json | undefined;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const ok = (data: unknown = {}): Json => ({ code: 0, msg: 'success', data });
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function sendJson(res: ServerResponse, status: number, obj: unknown): void {
  const b = JSON.stringify(obj);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(b),
    'x-tt-logid': `2024${hex(12)}`,
  });
  res.end(b);
}

function issueToken(c: Ctx, kind: 'tenant' | 'app'): Json {
  const { s, body } = c;
  if (s.refuse || body.app_id !== s.appId || body.app_secret !== s.appSecret) throw LarkError.of(ERR.appSecretInvalid);
  const token = `t-${hex(20)}`;
  const expire = 7200; // seconds; the SDK caches it until expire - 3 min
  s.tokens.set(token, Date.now() + expire * 1000);
  const out: Json = { code: 0, msg: 'ok', tenant_access_token: token, expire };
  if (kind === 'app') out.app_access_token = `a-${hex(20)}`;
  return out;
}

function getMessage(s: LarkState, id: string | undefined): StoredMessage {
  const m = id ? s.messages.get(id) : undefined;
  if (!m) throw LarkError.of(ERR.invalidParam, `message_id ${id ?? ''} not found`);
  if (m.deleted) throw LarkError.of(ERR.recalled);
  return m;
}

/** Validate `content` for msg_type (size first, then shape). */
function checkContent(s: LarkState, msgType: string, content: unknown): string {
  if (!msgType) throw LarkError.of(ERR.badParam, 'msg_type is required');
  if (typeof content !== 'string') throw LarkError.of(ERR.badParam, 'content must be a JSON string');
  const max = maxBytesFor(msgType);
  const bytes = Buffer.byteLength(content);
  if (max !== undefined && bytes > max) throw LarkError.of(ERR.tooLong, `${msgType} content is ${bytes} bytes, max ${max}`);
  const parsed = parseJson(content);
  if (!isObj(parsed)) throw LarkError.of(ERR.invalidParam, 'content is not a JSON object');
  if (msgType === 'text' && typeof parsed.text !== 'string') throw LarkError.of(ERR.invalidParam, 'text content needs "text"');
  if (msgType === 'post' && !Array.isArray(postBody(parsed)?.content))
    throw LarkError.of(ERR.invalidParam, 'post content needs zh_cn/en_us {title, content:[[…]]}');
  if (msgType === 'image' && !s.uploads.has(str(parsed.image_key))) throw LarkError.of(ERR.uploadNotFound, 'image_key');
  if (msgType === 'file' && !s.uploads.has(str(parsed.file_key))) throw LarkError.of(ERR.uploadNotFound, 'file_key');
  if (msgType === 'interactive' && parsed.type === 'card') {
    const card = s.cards.get(str(isObj(parsed.data) ? parsed.data.card_id : ''));
    if (!card) throw LarkError.of(ERR.cardContent, 'card_id not found');
    if (card.messageId) throw LarkError.of(ERR.cardContent, 'a card entity can only be sent once');
  }
  return content;
}

function record(c: Ctx, o: Omit<FakeOutbound, 'at' | 'raw'>): void {
  // An image or file message carries what the bot uploaded under its key.
  const parsed = o.format === 'image' || o.format === 'file' ? parseJson(c.body.content) : undefined;
  const up = isObj(parsed) ? c.s.uploads.get(str(parsed.image_key) || str(parsed.file_key)) : undefined;
  const file = up ? { file: { name: up.name, mimeType: up.mimeType, data: up.data, as: up.kind } } : {};
  // A card's callback buttons; `value` as the test reads it: a string as is, an object's `command`, else its JSON.
  const card = o.format === 'interactive' ? cardButtons(parseJson(c.body.content)) : [];
  const buttons = card.length ? { buttons: card.map((b) => ({ label: b.label, value: buttonValueText(b.value) })) } : {};
  c.s.outbound.push({ ...o, ...file, ...buttons, raw: c.body, at: Date.now() });
}

function buttonValueText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (isObj(v) && typeof v.command === 'string') return v.command;
  return JSON.stringify(v);
}

/** im/v1/images: `image_type` (message) and `image`; at most 10 MB, never empty. */
const uploadImage: Handler = (c) => {
  if (c.parts.get('image_type')?.data.toString() !== 'message') throw LarkError.of(ERR.badParam, 'image_type must be message');
  const image = c.parts.get('image')?.data;
  if (!image) throw LarkError.of(ERR.badParam, 'image is required');
  if (image.length === 0) throw LarkError.of(ERR.emptyFile);
  if (image.length > IMAGE_MAX_BYTES) throw LarkError.of(ERR.fileTooLarge, `image is ${image.length} bytes, max ${IMAGE_MAX_BYTES}`);
  const key = `img_v3_02${hex(12)}`;
  const mimeType = sniff(image);
  c.s.uploads.set(key, { kind: 'image', name: c.parts.get('image')?.fileName ?? `${key}.${mimeType.split('/')[1]}`, mimeType, data: image });
  return ok({ image_key: key });
};

/** im/v1/files: `file_type` (opus, mp4, pdf, doc, xls, ppt, stream), `file_name`, `file`; at most 30 MB, never empty. */
const uploadFile: Handler = (c) => {
  const fileType = c.parts.get('file_type')?.data.toString() ?? '';
  if (!FILE_TYPES.includes(fileType)) throw LarkError.of(ERR.badParam, `file_type must be one of ${FILE_TYPES.join('|')}`);
  const name = c.parts.get('file_name')?.data.toString('utf8') ?? '';
  if (!name) throw LarkError.of(ERR.badParam, 'file_name is required');
  const file = c.parts.get('file')?.data;
  if (!file) throw LarkError.of(ERR.badParam, 'file is required');
  if (file.length === 0) throw LarkError.of(ERR.emptyFile);
  if (file.length > FILE_MAX_BYTES) throw LarkError.of(ERR.fileTooLarge, `file is ${file.length} bytes, max ${FILE_MAX_BYTES}`);
  const key = `file_v3_00${hex(12)}`;
  c.s.uploads.set(key, { kind: 'file', name, mimeType: mimeOfName(name), data: file, fileType });
  return ok({ file_key: key });
};

const IMAGE_MAX_BYTES = 10 * 1024 * 1024;
const FILE_MAX_BYTES = 30 * 1024 * 1024;
const FILE_TYPES = ['opus', 'mp4', 'pdf', 'doc', 'xls', 'ppt', 'stream'];

function sniff(b: Buffer): string {
  if (b.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))) return 'image/png';
  if (b[0] === 0xff && b[1] === 0xd8) return 'image/jpeg';
  if (b.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  return 'application/octet-stream';
}

function mimeOfName(name: string): string {
  const ext = name.split('.').at(-1)?.toLowerCase() ?? '';
  return (
    { pdf: 'application/pdf', txt: 'text/plain', csv: 'text/csv', doc: 'application/msword', zip: 'application/zip', png: 'image/png' }[ext] ??
    'application/octet-stream'
  );
}

function storeBotMessage(c: Ctx, chatId: string, extra: Partial<StoredMessage>): StoredMessage {
  const { s, body } = c;
  const msgType = str(body.msg_type);
  const content = checkContent(s, msgType, body.content);
  const now = Date.now();
  const known = [...s.messages.values()].find((m) => m.chatId === chatId);
  const m: StoredMessage = {
    messageId: newMessageId(),
    chatId,
    chatType: known?.chatType ?? (chatId.startsWith('oc_p2p_') ? 'p2p' : 'group'),
    msgType,
    content,
    sender: { id: s.appId, idType: 'app_id', senderType: 'app' },
    createTime: now,
    updateTime: now,
    mentions: [],
    deleted: false,
    editCount: 0,
    ...extra,
  };
  const parsed = parseJson(content);
  if (msgType === 'interactive' && isObj(parsed) && parsed.type === 'card' && isObj(parsed.data)) {
    const card = s.cards.get(str(parsed.data.card_id));
    if (card) Object.assign(card, { messageId: m.messageId, chatId });
    m.cardId = card?.cardId;
  }
  s.messages.set(m.messageId, m);
  if (typeof body.uuid === 'string' && body.uuid) s.uuids.set(body.uuid, m.messageId);
  return m;
}

const text = (s: LarkState, m: StoredMessage): string => decodeContent(m.msgType, m.content, (id) => s.cards.get(id)?.card);

function deduped(c: Ctx): Json | undefined {
  const prior = typeof c.body.uuid === 'string' ? c.s.uuids.get(c.body.uuid) : undefined;
  const m = prior ? c.s.messages.get(prior) : undefined;
  return m ? ok(c.s.toItem(m)) : undefined;
}

const RECEIVE_ID_TYPES = ['open_id', 'user_id', 'union_id', 'email', 'chat_id'];

const sendMessage: Handler = (c) => {
  const idType = c.q.receive_id_type ?? '';
  if (!RECEIVE_ID_TYPES.includes(idType)) throw LarkError.of(ERR.badParam, `receive_id_type must be one of ${RECEIVE_ID_TYPES.join('|')}`);
  const receiveId = str(c.body.receive_id);
  if (!receiveId) throw LarkError.of(ERR.badParam, 'receive_id is required');
  const dup = deduped(c);
  if (dup) return dup;
  const chatId = idType === 'chat_id' ? receiveId : c.s.dmChatId(c.s.resolveUser(idType, receiveId));
  const m = storeBotMessage(c, chatId, {});
  record(c, { kind: 'send', chatId, text: text(c.s, m), format: m.msgType, messageId: m.messageId });
  return ok(c.s.toItem(m));
};

const replyMessage: Handler = (c) => {
  const parent = getMessage(c.s, c.p[0]);
  const dup = deduped(c);
  if (dup) return dup;
  let threadId = parent.threadId;
  if (c.body.reply_in_thread === true && !threadId) threadId = parent.threadId = newThreadId();
  const m = storeBotMessage(c, parent.chatId, { rootId: parent.rootId ?? parent.messageId, parentId: parent.messageId, threadId });
  record(c, { kind: 'reply', chatId: m.chatId, text: text(c.s, m), format: m.msgType, messageId: m.messageId, replyTo: parent.messageId, threadId });
  return ok(c.s.toItem(m));
};

function ownMessage(c: Ctx): StoredMessage {
  const m = getMessage(c.s, c.p[0]);
  if (m.sender.senderType !== 'app') throw LarkError.of(ERR.notOwnMessage);
  return m;
}

const editMessage: Handler = (c) => {
  const m = ownMessage(c);
  const msgType = str(c.body.msg_type);
  if (!['text', 'post'].includes(m.msgType) || !['text', 'post'].includes(msgType)) {
    throw LarkError.of(ERR.invalidParam, 'only text and post messages can be edited; use PATCH for cards');
  }
  if (m.editCount >= MAX_EDITS) throw LarkError.of(ERR.editLimit, `max ${MAX_EDITS} edits`);
  m.content = checkContent(c.s, msgType, c.body.content);
  Object.assign(m, { msgType, editCount: m.editCount + 1, updateTime: Date.now() });
  record(c, { kind: 'edit', chatId: m.chatId, text: text(c.s, m), format: msgType, messageId: m.messageId, threadId: m.threadId });
  return ok(c.s.toItem(m));
};

const patchCard: Handler = (c) => {
  const m = ownMessage(c);
  if (m.msgType !== 'interactive') throw LarkError.of(ERR.invalidParam, 'PATCH only updates card (interactive) messages');
  m.content = checkContent(c.s, 'interactive', c.body.content);
  Object.assign(m, { updateTime: Date.now(), cardId: undefined });
  record(c, { kind: 'edit', chatId: m.chatId, text: text(c.s, m), format: 'interactive', messageId: m.messageId, threadId: m.threadId });
  return ok();
};

const recallMessage: Handler = (c) => {
  const m = ownMessage(c);
  m.deleted = true;
  c.s.recalled.push(m.messageId);
  return ok();
};

const listMessages: Handler = (c) => {
  const { q, s } = c;
  const type = q.container_id_type;
  if (type !== 'chat' && type !== 'thread') throw LarkError.of(ERR.badParam, 'container_id_type must be chat or thread');
  if (!q.container_id) throw LarkError.of(ERR.badParam, 'container_id is required');
  const sort = q.sort_type ?? 'ByCreateTimeAsc';
  if (sort !== 'ByCreateTimeAsc' && sort !== 'ByCreateTimeDesc') throw LarkError.of(ERR.badParam, 'sort_type');
  const pageSize = q.page_size ? Number(q.page_size) : 20;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 50) throw LarkError.of(ERR.badParam, 'page_size must be 1..50');
  const offset = q.page_token ? Number(Buffer.from(q.page_token, 'base64url').toString()) : 0;
  if (!Number.isInteger(offset) || offset < 0) throw LarkError.of(ERR.badParam, 'page_token');
  // start_time / end_time are Unix *seconds* (strings), both inclusive.
  const start = q.start_time ? Number(q.start_time) : -Infinity;
  const end = q.end_time ? Number(q.end_time) : Infinity;
  if (Number.isNaN(start) || Number.isNaN(end)) throw LarkError.of(ERR.badParam, 'start_time/end_time are seconds');
  const all = [...s.messages.values()]
    .filter((m) => (type === 'chat' ? m.chatId : m.threadId) === q.container_id)
    .filter((m) => Math.floor(m.createTime / 1000) >= start && Math.floor(m.createTime / 1000) <= end)
    .sort((a, b) => (sort === 'ByCreateTimeAsc' ? a.createTime - b.createTime : b.createTime - a.createTime));
  const hasMore = offset + pageSize < all.length;
  const items = all.slice(offset, offset + pageSize).map((m) => s.toItem(m));
  const pageToken = hasMore ? Buffer.from(String(offset + pageSize)).toString('base64url') : undefined;
  return ok({ has_more: hasMore, page_token: pageToken, items });
};

const getResource: Handler = (c) => {
  if (c.q.type !== 'image' && c.q.type !== 'file') throw LarkError.of(ERR.badParam, 'type must be image or file');
  getMessage(c.s, c.p[0]);
  const r = c.s.resources.get(`${c.p[0]}/${c.p[1]}`);
  if (!r) throw LarkError.of(ERR.resourceNotFound);
  c.res.writeHead(200, {
    'content-type': r.mimeType,
    'content-length': r.data.length,
    // Encoded (RFC 6266), as a header can carry no control characters or raw non-ASCII.
    'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(r.fileName ?? c.p[1] ?? '')}`,
  });
  c.res.end(r.data);
  return undefined;
};

const addReaction: Handler = (c) => {
  getMessage(c.s, c.p[0]);
  const emojiType = str(isObj(c.body.reaction_type) ? c.body.reaction_type.emoji_type : '');
  if (!emojiType) throw LarkError.of(ERR.badParam, 'reaction_type.emoji_type is required');
  const reactionId = `ZCaCIjUBVVWSrm5L-${hex(8)}`;
  c.s.reactions.push({ messageId: c.p[0] ?? '', reactionId, emojiType, at: Date.now() });
  const operator = { operator_id: c.s.appId, operator_type: 'app' };
  return ok({ reaction_id: reactionId, operator, action_time: String(Date.now()), reaction_type: { emoji_type: emojiType } });
};

const removeReaction: Handler = (c) => {
  const r = c.s.reactions.find((x) => x.messageId === c.p[0] && x.reactionId === c.p[1] && !x.removed);
  if (!r) throw LarkError.of(ERR.invalidParam, 'reaction not found');
  r.removed = true;
  return ok({ reaction_id: r.reactionId, reaction_type: { emoji_type: r.emojiType } });
};

function parseCardJson(data: unknown): Json {
  const bytes = typeof data === 'string' ? Buffer.byteLength(data) : 0;
  if (bytes > CARD_MAX_BYTES) throw LarkError.of(ERR.cardContent, `card JSON is ${bytes} bytes, max ${CARD_MAX_BYTES}`);
  const card = parseJson(data);
  if (!isObj(card)) throw LarkError.of(ERR.invalidParam, 'data must be card JSON');
  if (card.schema !== '2.0') throw LarkError.of(ERR.invalidParam, 'CardKit only accepts card JSON 2.0 ("schema":"2.0")');
  const ids = elementIds(card);
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup) throw LarkError.of(ERR.duplicateElement, dup);
  return card;
}

function cardFor(c: Ctx, checkSequence = true): NonNullable<ReturnType<LarkState['cards']['get']>> {
  const card = c.s.cards.get(c.p[0] ?? '');
  if (!card) throw LarkError.of(ERR.cardNotFound);
  const seq = Number(c.body.sequence);
  if (checkSequence) {
    if (!Number.isInteger(seq) || seq < 1) throw LarkError.of(ERR.badParam, 'sequence is required (positive integer)');
    if (seq <= card.sequence) throw LarkError.of(ERR.sequence, `sequence ${seq} <= last ${card.sequence}`);
  }
  return card;
}

const isStreaming = (card: ReturnType<typeof cardFor>): boolean => card.streaming && Date.now() - (card.streamingSince ?? card.createdAt) < STREAMING_MAX_MS;

const createCard: Handler = (c) => {
  if (c.body.type !== 'card_json') throw LarkError.of(ERR.badParam, 'type must be card_json');
  const card = parseCardJson(c.body.data);
  const streaming = isObj(card.config) && card.config.streaming_mode === true;
  const cardId = newCardId();
  const now = Date.now();
  c.s.cards.set(cardId, { cardId, card, sequence: 0, streaming, streamingSince: streaming ? now : undefined, createdAt: now });
  return ok({ card_id: cardId });
};

const streamContent: Handler = (c) => {
  const card = cardFor(c, false);
  if (!isStreaming(card)) throw LarkError.of(ERR.streamingClosed);
  cardFor(c);
  const el = findElement(card.card, c.p[1] ?? '');
  if (!el) throw LarkError.of(ERR.elementNotFound, c.p[1]);
  const content = c.body.content;
  if (typeof content !== 'string') throw LarkError.of(ERR.badParam, 'content must be a string');
  if (content.length > ELEMENT_MAX_CHARS) throw LarkError.of(ERR.cardContent, `element content ${content.length} chars, max ${ELEMENT_MAX_CHARS}`);
  el.content = content;
  card.sequence = Number(c.body.sequence);
  record(c, { kind: 'stream', chatId: card.chatId ?? '', text: cardText(card.card), format: 'cardkit', messageId: card.messageId, finished: false });
  return ok();
};

const cardSettings: Handler = (c) => {
  const card = cardFor(c);
  const settings = parseJson(c.body.settings);
  if (!isObj(settings)) throw LarkError.of(ERR.badParam, 'settings must be a JSON string');
  card.sequence = Number(c.body.sequence);
  if (isObj(settings.config)) {
    const wasStreaming = isStreaming(card);
    card.card.config = { ...(isObj(card.card.config) ? card.card.config : {}), ...settings.config };
    if ('streaming_mode' in settings.config) {
      card.streaming = settings.config.streaming_mode === true;
      if (card.streaming && !wasStreaming) card.streamingSince = Date.now();
      if (wasStreaming && !card.streaming) {
        record(c, { kind: 'stream', chatId: card.chatId ?? '', text: cardText(card.card), format: 'cardkit', messageId: card.messageId, finished: true });
      }
    }
  }
  if (isObj(settings.card_link)) card.card.card_link = settings.card_link;
  return ok();
};

const updateCard: Handler = (c) => {
  const card = cardFor(c);
  const spec = isObj(c.body.card) ? c.body.card : {};
  if (spec.type !== 'card_json') throw LarkError.of(ERR.badParam, 'card.type must be card_json');
  card.card = parseCardJson(spec.data);
  card.sequence = Number(c.body.sequence);
  record(c, { kind: 'edit', chatId: card.chatId ?? '', text: cardText(card.card), format: 'cardkit', messageId: card.messageId });
  return ok();
};

const botInfo: Handler = (c) => ({
  code: 0,
  msg: 'ok',
  bot: { activate_status: 2, app_name: c.s.botName, avatar_url: '', ip_white_list: [], open_id: c.s.botOpenId },
});

const M = '/open-apis/im/v1/messages';
const C = '/open-apis/cardkit/v1/cards';
const ID = '([^/]+)';
const routes: Array<[method: string, re: RegExp, name: string, auth: boolean, fn: Handler]> = [
  ['POST', /^\/open-apis\/auth\/v3\/tenant_access_token\/internal$/, 'auth.tenantAccessToken', false, (c) => issueToken(c, 'tenant')],
  ['POST', /^\/open-apis\/auth\/v3\/app_access_token\/internal$/, 'auth.appAccessToken', false, (c) => issueToken(c, 'app')],
  ['GET', /^\/open-apis\/bot\/v3\/info$/, 'bot.info', true, botInfo],
  ['POST', new RegExp(`^${M}$`), 'im.message.create', true, sendMessage],
  ['GET', new RegExp(`^${M}$`), 'im.message.list', true, listMessages],
  ['POST', new RegExp(`^${M}/${ID}/reply$`), 'im.message.reply', true, replyMessage],
  ['GET', new RegExp(`^${M}/${ID}/resources/${ID}$`), 'im.messageResource.get', true, getResource],
  ['POST', /^\/open-apis\/im\/v1\/images$/, 'im.image.create', true, uploadImage],
  ['POST', /^\/open-apis\/im\/v1\/files$/, 'im.file.create', true, uploadFile],
  ['POST', new RegExp(`^${M}/${ID}/reactions$`), 'im.messageReaction.create', true, addReaction],
  ['DELETE', new RegExp(`^${M}/${ID}/reactions/${ID}$`), 'im.messageReaction.delete', true, removeReaction],
  ['GET', new RegExp(`^${M}/${ID}$`), 'im.message.get', true, (c) => ok({ items: [c.s.toItem(getMessage(c.s, c.p[0]))] })],
  ['PUT', new RegExp(`^${M}/${ID}$`), 'im.message.update', true, editMessage],
  ['PATCH', new RegExp(`^${M}/${ID}$`), 'im.message.patch', true, patchCard],
  ['DELETE', new RegExp(`^${M}/${ID}$`), 'im.message.delete', true, recallMessage],
  ['POST', new RegExp(`^${C}$`), 'cardkit.card.create', true, createCard],
  ['PUT', new RegExp(`^${C}/${ID}/elements/${ID}/content$`), 'cardkit.cardElement.content', true, streamContent],
  ['PATCH', new RegExp(`^${C}/${ID}/settings$`), 'cardkit.card.settings', true, cardSettings],
  ['PUT', new RegExp(`^${C}/${ID}$`), 'cardkit.card.update', true, updateCard],
];

function checkAuth(s: LarkState, header: string | undefined): void {
  const m = /^Bearer (\S+)$/.exec(header ?? '');
  if (!m?.[1]) throw LarkError.of(ERR.missingToken);
  const exp = s.tokens.get(m[1]);
  if (exp === undefined || exp < Date.now()) throw LarkError.of(ERR.invalidToken);
}

export function handleRest(s: LarkState, req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer): void {
  const method = req.method ?? 'GET';
  const q = Object.fromEntries(url.searchParams);
  let body: Json = {};
  const parts = new Map<string, { data: Buffer; fileName?: string; type: string }>();
  let name = `${method} ${url.pathname}`;
  try {
    const type = req.headers['content-type'] ?? '';
    if (raw.length && type.toLowerCase().startsWith('multipart/form-data')) {
      for (const part of parseMultipartParts(raw, type)) parts.set(part.name, part);
      // Logged with the fields' text and the files' sizes, not their bytes.
      body = Object.fromEntries(
        [...parts].map(([k, v]) => [k, v.fileName !== undefined || v.type !== 'text/plain' ? `<${v.data.length} bytes>` : v.data.toString()]),
      );
    } else if (raw.length) {
      const parsed = parseJson(raw.toString('utf8'));
      if (!isObj(parsed)) throw LarkError.of(ERR.badJson, 'body is not a JSON object');
      body = parsed;
    }
    s.requests.push({ method, path: url.pathname, query: q, body, auth: req.headers.authorization, at: Date.now() });
    for (const [m, re, routeName, auth, fn] of routes) {
      const hit = m === method ? re.exec(url.pathname) : null;
      if (!hit) continue;
      name = routeName;
      if (auth) checkAuth(s, req.headers.authorization);
      const out = fn({ s, p: hit.slice(1).map(decodeURIComponent), q, body, parts, res });
      if (out) sendJson(res, 200, out);
      return;
    }
    throw new LarkError(404, `fake lark: no route for ${method} ${url.pathname}`, 404);
  } catch (e) {
    const err = e instanceof LarkError ? e : new LarkError(500, `fake lark internal error: ${String(e)}`, 500);
    s.reject(name, err, body);
    sendJson(res, err.status, { code: err.code, msg: err.message, data: {} });
  }
}
