/**
 * Shared state of the fake Lark platform: stored messages (history), CardKit card entities, issued
 * tokens, what the bot did (outbound), what the fake refused (rejections), acks and waiters.
 */
import { randomBytes } from 'node:crypto';
import type { FakeOutbound, FakeRejection } from './types.js';

/**
 * Error codes the fake answers with, `[code, msg]`. Business errors are HTTP 400 with `{code, msg, data:{}}`
 * (a go-lark issue shows `400 Bad Request {"code":99991661,"msg":"Need a token","data":{}}`).
 * Provenance: "seen" = observed in third-party bug reports quoting real responses; "sdk" = named in the
 * SDK source; "unverified" = plausible guess, not confirmed from primary documentation.
 */
export const ERR = {
  missingToken: [99991661, 'Missing access token for authorization. Please make a request with token attached.'], // seen
  invalidToken: [99991663, 'Invalid access token for authorization. Please make a request with token attached.'], // seen
  badParam: [99992402, 'field validation failed'], // unverified
  badJson: [9499, 'Bad Request'], // unverified
  invalidParam: [230001, 'Your request contains an invalid request parameter.'], // sdk (classified as format_error)
  recalled: [230011, 'The message was recalled.'], // unverified
  tooLong: [230025, 'The message content exceeds the length limit.'], // unverified
  notOwnMessage: [230027, 'Lack of necessary permissions: the bot can only edit messages it sent.'], // unverified
  editLimit: [230072, 'The message has reached the number of times it can be edited.'], // seen (20 edits)
  cardContent: [230099, 'Failed to create card content'], // seen in notes / SDK comment (oversized element)
  cardNotFound: [300300, 'card not found'], // unverified
  duplicateElement: [300301, 'Duplicate element_id in card component'], // seen
  elementNotFound: [300302, 'element not found'], // unverified
  streamingClosed: [300309, 'streaming mode is closed'], // seen
  sequence: [300317, 'sequence number compare failed'], // seen
  resourceNotFound: [234003, 'File not in msg.'], // unverified
  fileTooLarge: [234006, 'The file size exceeds the limit.'], // unverified
  emptyFile: [234010, 'File size cannot be 0.'], // unverified
  uploadNotFound: [230001, 'Your request contains an invalid request parameter (unknown image_key / file_key).'], // sdk code, unverified text
  appSecretInvalid: [10014, 'app secret invalid'], // unverified
} as const satisfies Record<string, readonly [number, string]>;

export class LarkError extends Error {
  constructor(
    readonly code: number,
    msg: string,
    readonly status = 400,
  ) {
    super(msg);
  }
  static of(e: readonly [number, string], detail?: string): LarkError {
    return new LarkError(e[0], detail ? `${e[1]} (${detail})` : e[1]);
  }
}

export const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
export const newMessageId = (): string => `om_${hex(16)}`;
export const newThreadId = (): string => `omt_${hex(8)}`;
export const newCardId = (): string => `7${String(Date.now()).padStart(13, '0')}${String(Math.floor(Math.random() * 1e5)).padStart(5, '0')}`;

export interface LarkMention {
  key: string;
  openId: string;
  name: string;
}

export interface StoredMessage {
  messageId: string;
  chatId: string;
  chatType: 'p2p' | 'group';
  msgType: string;
  /** The JSON string, as sent / as delivered. */
  content: string;
  sender: { id: string; idType: 'open_id' | 'app_id'; senderType: 'user' | 'app' };
  createTime: number;
  updateTime: number;
  rootId?: string;
  parentId?: string;
  threadId?: string;
  mentions: LarkMention[];
  deleted: boolean;
  editCount: number;
  /** For interactive messages that reference a CardKit card entity. */
  cardId?: string;
}

export interface FakeCard {
  cardId: string;
  /** The parsed card JSON 2.0 (mutated by element content updates and settings). */
  card: Record<string, unknown>;
  /** Last accepted sequence (strictly increasing across content/settings/update calls). */
  sequence: number;
  streaming: boolean;
  streamingSince?: number;
  messageId?: string;
  chatId?: string;
  createdAt: number;
}

export interface LarkAck {
  /** IM message id (om_…) for message events, event_id for raw events. */
  messageId: string;
  at: number;
  eventId: string;
  /** The `code` from the ack payload: 200, or 500 when the SDK's handler threw. */
  code: number;
  /** The `message_id` frame header (one per delivery attempt). */
  frameMessageId: string;
  bizRt?: string;
  /** What the handler returned, decoded from the ack's base64 `data` (a card callback's answer, e.g. `{toast}`). */
  answer?: unknown;
}

export interface LarkRequestLog {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  auth?: string;
  at: number;
}

/** A list that can be awaited for an item matching a predicate. */
export class Recorder<T> {
  readonly items: T[] = [];
  private waiters = new Set<{ pred: (t: T) => boolean; resolve: (t: T) => void; reject: (e: Error) => void }>();

  push(item: T): void {
    this.items.push(item);
    for (const w of [...this.waiters]) {
      if (w.pred(item)) {
        this.waiters.delete(w);
        w.resolve(item);
      }
    }
  }

  wait(pred: (t: T) => boolean, timeoutMs: number, what: string): Promise<T> {
    const hit = this.items.find(pred);
    if (hit !== undefined) return Promise.resolve(hit);
    return new Promise<T>((resolve, reject) => {
      const w = {
        pred,
        resolve: (t: T) => {
          clearTimeout(timer);
          resolve(t);
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        reject(new Error(`fake lark: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.waiters.add(w);
    });
  }

  rejectAll(err: Error): void {
    for (const w of this.waiters) w.reject(err);
    this.waiters.clear();
  }
}

export class LarkState {
  readonly appId = 'cli_0123456789abcdef';
  readonly appSecret = 'fake-secret';
  readonly botOpenId = 'ou_bot0000000000000000000000000001';
  readonly botName = 'Fake Lark Bot';
  readonly tenantKey = '736588c92b0f175e';
  readonly messages = new Map<string, StoredMessage>();
  readonly cards = new Map<string, FakeCard>();
  /** token -> expiry (ms epoch) */
  readonly tokens = new Map<string, number>();
  readonly users = new Map<string, { openId: string; name: string }>();
  /** `${messageId}/${key}` -> resource */
  readonly resources = new Map<string, { mimeType: string; data: Buffer; fileName?: string }>();
  readonly uuids = new Map<string, string>();
  /** image_key / file_key -> what the bot uploaded (im/v1/images, im/v1/files). */
  readonly uploads = new Map<string, { kind: 'image' | 'file'; name: string; mimeType: string; data: Buffer; fileType?: string }>();
  readonly outbound = new Recorder<FakeOutbound>();
  readonly rejections: FakeRejection[] = [];
  readonly acks = new Recorder<LarkAck>();
  readonly requests: LarkRequestLog[] = [];
  readonly reactions: Array<{ messageId: string; reactionId: string; emojiType: string; at: number; removed?: boolean }> = [];
  readonly recalled: string[] = [];
  refuse = false;

  dmChatId(userId: string): string {
    return `oc_p2p_${userId.replace(/^ou_/, '')}`;
  }

  /** Resolve a receive_id of any id type to the user's open_id (unknown ids are taken as open_ids). */
  resolveUser(idType: string, id: string): string {
    if (idType === 'open_id') return id;
    for (const u of this.users.values()) {
      const base = u.openId.replace(/^ou_/, '');
      if ((idType === 'user_id' && base === id) || (idType === 'union_id' && `on_${base}` === id)) return u.openId;
      if (idType === 'email' && `${base}@example.com` === id) return u.openId;
    }
    return id;
  }

  reject(method: string, err: LarkError, raw: unknown): void {
    this.rejections.push({ method, reason: `${err.code}: ${err.message}`, raw, at: Date.now() });
  }

  /** The message in the shape of the REST API (`data` of create/reply/update, `items[]` of list). */
  toItem(m: StoredMessage): Record<string, unknown> {
    return {
      message_id: m.messageId,
      root_id: m.rootId,
      parent_id: m.parentId,
      thread_id: m.threadId,
      msg_type: m.msgType,
      create_time: String(m.createTime),
      update_time: String(m.updateTime),
      deleted: m.deleted,
      updated: m.editCount > 0,
      chat_id: m.chatId,
      sender: { id: m.sender.id, id_type: m.sender.idType, sender_type: m.sender.senderType, tenant_key: this.tenantKey },
      body: { content: m.deleted ? JSON.stringify({ text: 'This message was recalled' }) : m.content },
      mentions: m.mentions.map((x) => ({ key: x.key, id: x.openId, id_type: 'open_id', name: x.name, tenant_key: this.tenantKey })),
      upper_message_id: '',
    };
  }
}
