/**
 * Web API half of the fake Slack (channel_d): `POST /api/<method>` handlers. The server, the Socket
 * Mode websocket and the FakePlatform surface live in channel-d-slack.ts; see the comment there.
 *
 * Wire facts implemented (web-api 8.2.0): bodies are form-urlencoded with nested values
 * JSON-stringified (JSON bodies are accepted too); the token comes in `Authorization: Bearer` or a
 * `token` field; answers are HTTP 200 `{ok:true,...}` / `{ok:false,error}`, except a rate limit,
 * which is HTTP 429 plus `Retry-After`.
 *
 * Outbound recording rule: `chat.postMessage` with `thread_ts` is kind 'reply' (replyTo = threadId =
 * thread_ts), without it kind 'send'. `chat.update` is 'edit'; chat.startStream/appendStream/
 * stopStream are 'stream' frames carrying the accumulated text (stopStream has finished: true);
 * `assistant.threads.setStatus` is 'typing'. chatId is the resolved channel id (a `U…` user id
 * posted to resolves to its DM channel `D<user>`). text is entity-decoded (&lt; &gt; &amp;).
 *
 * Uploads (web-api's files.uploadV2): `files.getUploadURLExternal` (filename, length) answers an
 * `upload_url` on this fake and a file id; the bytes are POSTed there (channel-d-slack.ts);
 * `files.completeUploadExternal` (files [{id, title}], channel_id, thread_ts) shares them: a bot
 * message of subtype file_share, recorded as 'reply' (in a thread) or 'send' with `file`.
 */
import { randomUUID } from 'node:crypto';
import type { Recorder } from './_shared-slack-telegram.js';
import type { FakeButton } from './types.js';

export interface SlackFile {
  id: string;
  name: string;
  mimetype: string;
  data: Buffer;
}

export interface SlackMessage {
  type: 'message';
  ts: string;
  team: string;
  text: string;
  user?: string;
  bot_id?: string;
  app_id?: string;
  subtype?: string;
  thread_ts?: string;
  client_msg_id?: string;
  edited?: { user: string; ts: string };
  files?: unknown[];
  blocks?: unknown;
}

/** An upload between files.getUploadURLExternal and files.completeUploadExternal. */
export interface SlackUpload {
  id: string;
  filename: string;
  length: number;
  data?: Buffer;
}

export interface SlackState {
  port: number;
  botToken: string;
  appToken: string;
  teamId: string;
  appId: string;
  botId: string;
  botUserId: string;
  botName: string;
  refuse: boolean;
  channels: Map<string, SlackMessage[]>;
  users: Map<string, string>;
  files: Map<string, SlackFile>;
  uploads: Map<string, SlackUpload>;
  tickets: Set<string>;
  connectionsOpened: number;
  failures: Map<string, { error?: string; retryAfter?: number }>;
  /** Unix ms until which a method refused with a Retry-After stays refused (429 with the time left). */
  holds: Map<string, number>;
  calls: Array<{ method: string; params: Record<string, unknown>; at: number }>;
  recorder: Recorder;
  newTs(ms?: number): string;
  /** Called after the bot created a message (echo to the socket when enabled). */
  onBotMessage(channel: string, msg: SlackMessage): void;
}

export interface ApiResult {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

export const SLACK_TEXT_LIMIT = 40_000;
/** Slack takes files up to 1 GB. */
const SLACK_FILE_LIMIT = 1024 * 1024 * 1024;

function mimeOfName(name: string): string {
  const ext = name.split('.').at(-1)?.toLowerCase() ?? '';
  return (
    { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', pdf: 'application/pdf', txt: 'text/plain', csv: 'text/csv' }[ext] ??
    'application/octet-stream'
  );
}

const decode = (t: string): string => t.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);

/** Form bodies carry nested values as JSON strings; JSON bodies carry them as values. */
function json(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return undefined;
  }
}

export function tsKey(ts: string): number {
  const [s, u] = ts.split('.');
  return Number(s) * 1e6 + Number((u ?? '').padEnd(6, '0').slice(0, 6));
}

function chunkText(chunks: unknown): string {
  const arr = json(chunks);
  if (!Array.isArray(arr)) return '';
  return arr.map((c: { type?: string; text?: string }) => (c?.type === 'markdown_text' ? (c.text ?? '') : '')).join('');
}

/**
 * Buttons of an `actions` block → what a user sees and what a press sends (undefined: none; a string:
 * Slack's refusal, as `invalid_blocks` with its detail).
 */
export function blockButtons(blocks: unknown): FakeButton[] | undefined | string {
  const arr = json(blocks);
  if (!Array.isArray(arr)) return undefined;
  const buttons: FakeButton[] = [];
  for (const block of arr as Array<{ type?: string; block_id?: string; elements?: unknown }>) {
    if (block?.type !== 'actions') continue;
    if (!Array.isArray(block.elements) || block.elements.length === 0 || block.elements.length > 25) return 'invalid_blocks: elements must have 1-25 items';
    const ids = new Set<string>();
    for (const e of block.elements as Array<{ type?: string; action_id?: string; value?: unknown; text?: { type?: string; text?: string } }>) {
      if (e.type !== 'button') continue;
      const label = e.text?.text ?? '';
      if (e.text?.type !== 'plain_text' || !label || label.length > 75) return 'invalid_blocks: button text must be plain_text of 1-75 characters';
      if (typeof e.value !== 'string' || e.value.length > 2000) return 'invalid_blocks: button value must be a string of at most 2000 characters';
      if (!e.action_id || ids.has(e.action_id)) return 'invalid_blocks: action_id must be unique within the block';
      ids.add(e.action_id);
      buttons.push({ label, value: e.value });
    }
  }
  return buttons.length ? buttons : undefined;
}

function blockText(blocks: unknown): string {
  const arr = json(blocks);
  if (!Array.isArray(arr)) return '';
  return arr
    .map((b: { text?: { text?: string } }) => b?.text?.text ?? '')
    .filter(Boolean)
    .join('\n');
}

export function handleSlackApi(s: SlackState, method: string, p: Record<string, unknown>, token: string | undefined): ApiResult {
  s.calls.push({ method, params: p, at: Date.now() });
  const fail = (error: string, extra: Record<string, unknown> = {}): ApiResult => {
    s.recorder.addRejection(method, error, p);
    return { status: 200, body: { ok: false, error, ...extra } };
  };
  const held = (s.holds.get(method) ?? 0) - Date.now();
  if (held > 0) {
    s.recorder.addRejection(method, 'ratelimited', p);
    return { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'retry-after': String(Math.ceil(held / 1000)) } };
  }
  const injected = s.failures.get(method);
  if (injected) {
    s.failures.delete(method);
    if (injected.retryAfter !== undefined) {
      s.holds.set(method, Date.now() + injected.retryAfter * 1000);
      s.recorder.addRejection(method, 'ratelimited', p);
      return { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'retry-after': String(injected.retryAfter) } };
    }
    return fail(injected.error ?? 'internal_error');
  }
  // A revoked/refused app answers every call, both tokens, with invalid_auth.
  if (s.refuse) return fail('invalid_auth');
  if (!token) return fail('not_authed');
  const wantApp = method === 'apps.connections.open';
  if (token !== s.botToken && token !== s.appToken) return fail('invalid_auth');
  if (wantApp !== (token === s.appToken)) return fail('not_allowed_token_type');

  const channelOf = (v: unknown): string | undefined => {
    const c = str(v);
    if (!c) return undefined;
    if (/^U[A-Z0-9]+$/.test(c)) return `D${c}`;
    return /^[CDG][A-Z0-9]+$/.test(c) || s.channels.has(c) ? c : undefined;
  };
  const find = (channel: string, ts: string) => s.channels.get(channel)?.find((m) => m.ts === ts);
  const botMsg = (channel: string, text: string, thread?: string): SlackMessage => {
    const msg: SlackMessage = { type: 'message', ts: s.newTs(), team: s.teamId, text, user: s.botUserId, bot_id: s.botId, app_id: s.appId };
    if (thread) msg.thread_ts = thread;
    const list = s.channels.get(channel) ?? [];
    list.push(msg);
    s.channels.set(channel, list);
    return msg;
  };
  const textOf = () => {
    const text = str(p.text) ?? str(p.markdown_text) ?? chunkText(p.chunks);
    return text || blockText(p.blocks);
  };
  const format = () => (p.markdown_text !== undefined || p.chunks !== undefined ? 'markdown' : p.mrkdwn === false || p.mrkdwn === 'false' ? 'plain' : 'mrkdwn');

  switch (method) {
    case 'api.test':
      return { status: 200, body: { ok: true, args: p } };
    case 'auth.test':
      return {
        status: 200,
        body: {
          ok: true,
          url: 'https://fake-team.slack.com/',
          team: 'Fake Team',
          user: s.botName,
          team_id: s.teamId,
          user_id: s.botUserId,
          bot_id: s.botId,
          is_enterprise_install: false,
        },
      };
    case 'apps.connections.open': {
      const ticket = randomUUID();
      s.tickets.add(ticket);
      s.connectionsOpened += 1;
      return { status: 200, body: { ok: true, url: `ws://127.0.0.1:${s.port}/link/?ticket=${ticket}&app_id=${s.appId}` } };
    }
    case 'users.info': {
      const id = str(p.user) ?? '';
      const name = id === s.botUserId ? s.botName : s.users.get(id);
      if (name === undefined) return fail('user_not_found');
      return {
        status: 200,
        body: {
          ok: true,
          user: { id, team_id: s.teamId, name, real_name: name, is_bot: id === s.botUserId, deleted: false, profile: { real_name: name, display_name: name } },
        },
      };
    }
    case 'chat.postMessage':
    case 'chat.startStream': {
      const channel = channelOf(p.channel);
      if (!channel) return fail('channel_not_found');
      const text = textOf();
      const thread = str(p.thread_ts);
      const stream = method === 'chat.startStream';
      if (stream && !thread) return fail('invalid_arguments');
      if (!stream && !text && p.blocks === undefined && p.attachments === undefined) return fail('no_text');
      if (text.length > SLACK_TEXT_LIMIT) return fail('msg_too_long');
      const buttons = blockButtons(p.blocks);
      if (typeof buttons === 'string') return fail('invalid_blocks', { errors: [buttons] });
      const msg = botMsg(channel, text, thread);
      if (p.blocks !== undefined) msg.blocks = json(p.blocks);
      s.recorder.addOutbound({
        kind: stream ? 'stream' : thread ? 'reply' : 'send',
        chatId: channel,
        text: decode(text),
        format: format(),
        messageId: msg.ts,
        ...(thread ? { replyTo: thread, threadId: thread } : {}),
        ...(stream ? { finished: false } : {}),
        ...(buttons ? { buttons } : {}),
        raw: p,
      });
      s.onBotMessage(channel, msg);
      return { status: 200, body: { ok: true, channel, ts: msg.ts, message: msg } };
    }
    case 'files.getUploadURLExternal': {
      const filename = str(p.filename);
      const length = Number(p.length);
      if (!filename || !Number.isInteger(length) || length <= 0) return fail('invalid_arguments');
      if (length > SLACK_FILE_LIMIT) return fail('file_too_large');
      const id = `F${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`;
      s.uploads.set(id, { id, filename, length });
      return { status: 200, body: { ok: true, upload_url: `http://127.0.0.1:${s.port}/upload/v1/${id}`, file_id: id } };
    }
    case 'files.completeUploadExternal': {
      const files = json(p.files);
      if (!Array.isArray(files) || files.length === 0) return fail('invalid_arguments');
      const channel = p.channel_id === undefined ? undefined : channelOf(p.channel_id);
      if (p.channel_id !== undefined && !channel) return fail('channel_not_found');
      const thread = str(p.thread_ts);
      const done: SlackFile[] = [];
      for (const f of files as Array<{ id?: string; title?: string }>) {
        const upload = s.uploads.get(f.id ?? '');
        if (!upload?.data) return fail('file_not_found');
        if (upload.data.length !== upload.length) return fail('file_upload_size_mismatch');
        const file: SlackFile = { id: upload.id, name: upload.filename, mimetype: mimeOfName(upload.filename), data: upload.data };
        s.uploads.delete(upload.id);
        s.files.set(file.id, file);
        done.push(file);
      }
      if (channel) {
        for (const file of done) {
          const msg = botMsg(channel, str(p.initial_comment) ?? '', thread);
          msg.subtype = 'file_share';
          msg.files = [{ id: file.id, name: file.name, title: file.name, mimetype: file.mimetype, size: file.data.length }];
          s.recorder.addOutbound({
            kind: thread ? 'reply' : 'send',
            chatId: channel,
            text: decode(msg.text),
            messageId: msg.ts,
            ...(thread ? { replyTo: thread, threadId: thread } : {}),
            file: { name: file.name, mimeType: file.mimetype, data: file.data, as: file.mimetype.startsWith('image/') ? 'image' : 'file' },
            raw: p,
          });
          s.onBotMessage(channel, msg);
        }
      }
      return { status: 200, body: { ok: true, files: done.map((f) => ({ id: f.id, title: f.name })) } };
    }
    case 'chat.update':
    case 'chat.appendStream':
    case 'chat.stopStream': {
      const channel = channelOf(p.channel) ?? '';
      const msg = find(channel, str(p.ts) ?? '');
      if (!msg) return fail('message_not_found');
      if (msg.user !== s.botUserId) return fail('cant_update_message');
      const stream = method !== 'chat.update';
      const text = stream ? msg.text + textOf() : textOf();
      if (!stream && !text && p.blocks === undefined) return fail('no_text');
      if (text.length > SLACK_TEXT_LIMIT) return fail('msg_too_long');
      msg.text = text;
      if (!stream) msg.edited = { user: s.botUserId, ts: s.newTs() };
      s.recorder.addOutbound({
        kind: stream ? 'stream' : 'edit',
        chatId: channel,
        text: decode(text),
        format: format(),
        messageId: msg.ts,
        ...(msg.thread_ts ? { threadId: msg.thread_ts } : {}),
        ...(stream ? { finished: method === 'chat.stopStream' } : {}),
        raw: p,
      });
      return { status: 200, body: { ok: true, channel, ts: msg.ts, text, message: msg } };
    }
    case 'chat.delete': {
      const channel = channelOf(p.channel) ?? '';
      const list = s.channels.get(channel) ?? [];
      const i = list.findIndex((m) => m.ts === str(p.ts));
      if (i < 0) return fail('message_not_found');
      if (list[i]?.user !== s.botUserId) return fail('cant_delete_message');
      list.splice(i, 1);
      return { status: 200, body: { ok: true, channel, ts: p.ts } };
    }
    case 'assistant.threads.setStatus': {
      const channel = channelOf(p.channel_id);
      if (!channel) return fail('channel_not_found');
      s.recorder.addOutbound({ kind: 'typing', chatId: channel, text: str(p.status) ?? '', threadId: str(p.thread_ts), raw: p });
      return { status: 200, body: { ok: true } };
    }
    case 'reactions.add':
    case 'reactions.remove':
      return find(channelOf(p.channel) ?? '', str(p.timestamp) ?? '') ? { status: 200, body: { ok: true } } : fail('message_not_found');
    case 'conversations.history':
    case 'conversations.replies': {
      const channel = channelOf(p.channel);
      if (!channel) return fail('channel_not_found');
      const all = s.channels.get(channel) ?? [];
      let list: SlackMessage[];
      if (method === 'conversations.history') {
        // Top-level messages only (thread replies stay in their thread), newest first.
        list = all.filter((m) => !m.thread_ts || m.thread_ts === m.ts).sort((a, b) => tsKey(b.ts) - tsKey(a.ts));
      } else {
        // Real Slack: the parent first, then the replies, oldest first.
        const parent = str(p.ts) ?? '';
        list = all.filter((m) => m.ts === parent || m.thread_ts === parent).sort((a, b) => tsKey(a.ts) - tsKey(b.ts));
        if (!list.some((m) => m.ts === parent)) return fail('thread_not_found');
      }
      const inclusive = p.inclusive === true || p.inclusive === 'true' || p.inclusive === '1';
      const oldest = str(p.oldest);
      const latest = str(p.latest);
      list = list.filter((m) => {
        const k = tsKey(m.ts);
        if (oldest && (inclusive ? k < tsKey(oldest) : k <= tsKey(oldest))) return false;
        if (latest && (inclusive ? k > tsKey(latest) : k >= tsKey(latest))) return false;
        return true;
      });
      const cursor = str(p.cursor);
      if (cursor) {
        const start = Buffer.from(cursor, 'base64')
          .toString('utf8')
          .replace(/^next_ts:/, '');
        const i = list.findIndex((m) => m.ts === start);
        if (i < 0) return fail('invalid_cursor');
        list = list.slice(i);
      }
      const limit = Math.min(Math.max(Number(p.limit ?? 100) || 100, 1), 999);
      const page = list.slice(0, limit);
      const next = list[limit];
      return {
        status: 200,
        body: {
          ok: true,
          messages: page,
          has_more: next !== undefined,
          ...(method === 'conversations.history' ? { pin_count: 0 } : {}),
          response_metadata: { next_cursor: next ? Buffer.from(`next_ts:${next.ts}`).toString('base64') : '' },
        },
      };
    }
    default:
      return fail('unknown_method');
  }
}
