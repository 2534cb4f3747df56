import { readCappedResponse } from '../download.js';
import { ChannelError } from '../types.js';

/**
 * The DingTalk HTTP calls the SDK does not cover: the new-style access token, robot sends, AI-card
 * streaming, and posts to a message's sessionWebhook. Plain `fetch` against a configurable base URL
 * (the SDK's getAccessToken() calls the legacy oapi.dingtalk.com endpoint and cannot be redirected).
 */
export interface DingtalkApiOptions {
  name: string;
  baseUrl: string;
  /** The older API host (oapi.dingtalk.com), where media are uploaded. */
  oapiBaseUrl: string;
  clientId: string;
  clientSecret: string;
  timeoutMs: number;
  /** Aborted by stop(): no request outlives the adapter. */
  signal: AbortSignal;
}

export type Json = Record<string, unknown>;

export interface DingtalkApi {
  /** POST/PUT an OpenAPI path with the access token; refreshes the token once on 401. */
  call(method: 'POST' | 'PUT', path: string, body: Json): Promise<Json>;
  /** POST to a sessionWebhook; resolves on errcode 0. Expired sessions throw kind 'not_found'. */
  postWebhook(url: string, body: Json): Promise<void>;
  /**
   * GET a file a robot message carries (the downloadUrl of /v1.0/robot/messageFiles/download), at
   * most `maxBytes` (past it: ChannelError 'too_long'); the type is the response's.
   */
  fetchFile(url: string, maxBytes: number): Promise<{ data: Buffer; mimeType: string | undefined }>;
  /**
   * Upload to the older API's `/media/upload` (multipart field `media`), which is where the robot
   * message templates (sampleImageMsg, sampleFile) take their media id from. The access token of
   * the new API is accepted there as `access_token` for an internal app.
   */
  uploadMedia(type: 'image' | 'file', name: string, mimeType: string, data: Buffer): Promise<string>;
}

/** Renew this long before DingTalk's stated expiry (clock skew, requests in flight). */
const TOKEN_MARGIN_MS = 5 * 60_000;

export function createDingtalkApi(o: DingtalkApiOptions): DingtalkApi {
  let cached: { value: string; expiresAt: number } | undefined;
  let inflight: Promise<string> | undefined;

  const request = async (method: string, url: string, body: Json, headers: Record<string, string> = {}) => {
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.any([o.signal, AbortSignal.timeout(o.timeoutMs)]),
      });
    } catch (err) {
      throw new ChannelError(o.name, 'network', `${method} ${pathOf(url)}: ${causeText(err)}`, { cause: err });
    }
    const text = await res.text().catch(() => '');
    let json: Json = {};
    try {
      const v: unknown = JSON.parse(text);
      if (v && typeof v === 'object') json = v as Json;
    } catch {
      // non-JSON error pages are reported by status below
    }
    return { status: res.status, ok: res.ok, json };
  };

  const fetchToken = async (): Promise<string> => {
    const r = await request('POST', `${o.baseUrl}/v1.0/oauth2/accessToken`, { appKey: o.clientId, appSecret: o.clientSecret });
    const token = r.json.accessToken;
    if (!r.ok || typeof token !== 'string') throw openApiError(o.name, 'POST /v1.0/oauth2/accessToken', r.status, r.json);
    const ttlSec = typeof r.json.expireIn === 'number' ? r.json.expireIn : 7200;
    cached = { value: token, expiresAt: Date.now() + Math.max(ttlSec * 1000 - TOKEN_MARGIN_MS, ttlSec * 500) };
    return token;
  };

  /** One token request at a time; cached until shortly before it expires. */
  const accessToken = (): Promise<string> => {
    if (cached && cached.expiresAt > Date.now()) return Promise.resolve(cached.value);
    inflight ??= fetchToken().finally(() => {
      inflight = undefined;
    });
    return inflight;
  };

  return {
    async call(method, path, body) {
      for (let attempt = 0; ; attempt++) {
        const token = await accessToken();
        const r = await request(method, `${o.baseUrl}${path}`, body, { 'x-acs-dingtalk-access-token': token });
        if (r.ok) return r.json;
        // A token revoked early (secret rotated, app re-authorised): fetch a new one, once.
        if (r.status === 401 && attempt === 0) {
          cached = undefined;
          continue;
        }
        throw openApiError(o.name, `${method} ${path}`, r.status, r.json);
      }
    },

    async fetchFile(url, maxBytes) {
      let res: Response;
      try {
        res = await fetch(url, { signal: AbortSignal.any([o.signal, AbortSignal.timeout(o.timeoutMs * 8)]) });
      } catch (err) {
        throw new ChannelError(o.name, 'network', `GET ${pathOf(url)}: ${causeText(err)}`, { cause: err });
      }
      if (!res.ok) {
        await res.body?.cancel();
        throw new ChannelError(o.name, res.status === 404 || res.status === 403 ? 'not_found' : 'other', `GET ${pathOf(url)}: HTTP ${res.status}`);
      }
      const data = await readCappedResponse(o.name, res, maxBytes, 'the file');
      return { data, mimeType: res.headers.get('content-type')?.split(';')[0]?.trim() || undefined };
    },

    async uploadMedia(type, name, mimeType, data) {
      const form = new FormData();
      form.append('media', new Blob([new Uint8Array(data)], { type: mimeType }), name);
      const what = `POST /media/upload (${type})`;
      let res: Response;
      try {
        const query = new URLSearchParams({ access_token: await accessToken(), type });
        res = await fetch(`${o.oapiBaseUrl}/media/upload?${query}`, {
          method: 'POST',
          body: form,
          signal: AbortSignal.any([o.signal, AbortSignal.timeout(o.timeoutMs * 8)]),
        });
      } catch (err) {
        if (err instanceof ChannelError) throw err;
        throw new ChannelError(o.name, 'network', `${what}: ${causeText(err)}`, { cause: err });
      }
      const json = (await res.json().catch(() => ({}))) as Json;
      if (res.ok && json.errcode === 0 && typeof json.media_id === 'string') return json.media_id;
      const detail = `${what}: HTTP ${res.status} errcode ${String(json.errcode)} ${String(json.errmsg ?? '')}`.trim();
      throw new ChannelError(o.name, tooLong(String(json.errmsg ?? '')) ? 'too_long' : res.status === 401 || json.errcode === 40014 ? 'auth' : 'other', detail);
    },

    async postWebhook(url, body) {
      const r = await request('POST', url, body);
      const errcode = typeof r.json.errcode === 'number' ? r.json.errcode : r.ok ? 0 : -1;
      if (r.ok && errcode === 0) return;
      const errmsg = String(r.json.errmsg ?? `HTTP ${r.status}`);
      const what = `sessionWebhook: ${errcode} ${errmsg}`;
      // 300001 "session 不存在": the webhook expired (community logs); the caller falls back to the OpenAPI.
      if (errcode === 300001 || r.status === 404) throw new ChannelError(o.name, 'not_found', what);
      if (errcode === 130101 || r.status === 429) throw new ChannelError(o.name, 'rate_limited', what);
      if (errcode === 460101 || tooLong(errmsg)) throw new ChannelError(o.name, 'too_long', what);
      throw new ChannelError(o.name, 'other', what);
    },
  };
}

function openApiError(name: string, what: string, status: number, json: Json): ChannelError {
  const code = String(json.code ?? '');
  const message = String(json.message ?? '');
  const text = `${what}: HTTP ${status}${code ? ` ${code}` : ''}${message ? ` ${message}` : ''}`;
  // Rate limits first: DingTalk answers them with 403 Forbidden.AccessDenied.QpsLimitForApi.
  const kind: ChannelError['kind'] =
    status === 429 || /Throttling|QpsLimit/i.test(code)
      ? 'rate_limited'
      : status === 401 || status === 403 || /InvalidAuthentication|AccessDenied/.test(code)
        ? 'auth'
        : status === 404 || /NotFound/i.test(code)
          ? 'not_found'
          : tooLong(`${code} ${message}`)
            ? 'too_long'
            : 'other';
  return new ChannelError(name, kind, text);
}

function tooLong(text: string): boolean {
  return /too ?long|TooLong|过长|超过|exceed/i.test(text);
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname; // never log a sessionWebhook's query (it is a credential)
  } catch {
    return 'request';
  }
}

/** The useful part of a fetch / ws error (fetch hides the reason in `cause`). */
export function causeText(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}
