/**
 * Helpers shared by the Slack (channel_d) and Telegram (channel_e) fakes: the outbound/ack/rejection
 * recorder with waiters, a small request-body parser (JSON, form-urlencoded, multipart, query
 * string) and HTTP plumbing. Named with both prefixes so it cannot collide with the other fakes.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeOutbound, FakeRejection } from './types.js';
import { HANG_MS } from '../../helpers/wait.js';

export interface UploadedFile {
  field: string;
  fileName: string;
  mimeType: string;
  data: Buffer;
}

export interface ParsedBody {
  /** Query-string and body fields merged (body wins). JSON bodies keep their structure. */
  params: Record<string, unknown>;
  files: UploadedFile[];
}

type Waiter = { check: () => boolean; fail: (e: Error) => void };

/** Outbound / rejection / ack store with predicate waiters that also see what is already recorded. */
export class Recorder {
  readonly outbound: FakeOutbound[] = [];
  readonly rejections: FakeRejection[] = [];
  readonly acks: Array<{ messageId: string; at: number }> = [];
  private readonly waiters = new Set<Waiter>();
  private closed = false;

  addOutbound(o: Omit<FakeOutbound, 'at'>): FakeOutbound {
    const rec = { ...o, at: Date.now() };
    this.outbound.push(rec);
    this.notify();
    return rec;
  }

  addRejection(method: string, reason: string, raw: unknown): void {
    this.rejections.push({ method, reason, raw, at: Date.now() });
    this.notify();
  }

  addAck(messageId: string): void {
    this.acks.push({ messageId, at: Date.now() });
    this.notify();
  }

  /** Re-run every waiter's check; call after any state change a waiter may be watching. */
  notify(): void {
    for (const w of [...this.waiters]) if (w.check()) this.waiters.delete(w);
  }

  /** Resolve with the first non-undefined value of `probe`, checked now and after every notify(). */
  waitFor<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`fake closed; cannot wait for ${what}`));
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const waiter: Waiter = {
        check: () => {
          const v = probe();
          if (v === undefined) return false;
          clearTimeout(timer);
          resolve(v);
          return true;
        },
        fail: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      if (!waiter.check()) this.waiters.add(waiter);
    });
  }

  waitForOutbound(pred: (o: FakeOutbound) => boolean, timeoutMs = HANG_MS): Promise<FakeOutbound> {
    return this.waitFor(() => this.outbound.find(pred), timeoutMs, 'a matching outbound message');
  }

  waitForAck(messageId: string, timeoutMs = HANG_MS): Promise<{ messageId: string; at: number }> {
    return this.waitFor(() => this.acks.find((a) => a.messageId === messageId), timeoutMs, `ack of ${messageId}`);
  }

  /** Reject every pending waiter (used by close()). */
  close(): void {
    this.closed = true;
    for (const w of this.waiters) w.fail(new Error('fake platform closed'));
    this.waiters.clear();
  }
}

export function readRaw(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Parse query string + body. Handles application/json, x-www-form-urlencoded and multipart/form-data. */
export async function parseRequest(req: IncomingMessage): Promise<ParsedBody> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
  const files: UploadedFile[] = [];
  const raw = await readRaw(req);
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (raw.length === 0) return { params, files };
  if (type.startsWith('application/json')) {
    const body: unknown = JSON.parse(raw.toString('utf8'));
    if (body && typeof body === 'object') Object.assign(params, body);
  } else if (type.startsWith('multipart/form-data')) {
    const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(req.headers['content-type'] ?? '');
    const boundary = m?.[1] ?? m?.[2];
    if (!boundary) throw new Error('multipart body without boundary');
    for (const part of splitMultipart(raw, boundary)) {
      if (part.fileName !== undefined) {
        files.push({ field: part.name, fileName: part.fileName, mimeType: part.type, data: part.data });
      } else {
        params[part.name] = part.data.toString('utf8');
      }
    }
  } else {
    Object.assign(params, Object.fromEntries(new URLSearchParams(raw.toString('utf8'))));
  }
  return { params, files };
}

export interface Part {
  name: string;
  fileName?: string;
  type: string;
  data: Buffer;
}

/** Every part of a multipart/form-data body with its bytes as sent (fields without a filename too). */
export function parseMultipartParts(raw: Buffer, contentType: string): Part[] {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary) throw new Error('multipart body without boundary');
  return splitMultipart(raw, boundary);
}

function splitMultipart(raw: Buffer, boundary: string): Part[] {
  const delim = Buffer.from(`--${boundary}`);
  const parts: Part[] = [];
  let pos = raw.indexOf(delim);
  while (pos !== -1) {
    const start = pos + delim.length;
    if (raw.subarray(start, start + 2).toString() === '--') break;
    const next = raw.indexOf(delim, start);
    if (next === -1) break;
    const chunk = raw.subarray(start + 2, next - 2); // skip CRLF after delimiter and before the next one
    const headEnd = chunk.indexOf('\r\n\r\n');
    const head = chunk.subarray(0, headEnd).toString('utf8');
    const disp = /content-disposition:\s*form-data;([^\r\n]*)/i.exec(head)?.[1] ?? '';
    const name = /name="?([^";]+)"?/i.exec(disp)?.[1] ?? '';
    const fileName = /filename="?([^";]*)"?/i.exec(disp)?.[1];
    const type = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1] ?? 'text/plain';
    parts.push({ name, fileName, type, data: chunk.subarray(headEnd + 4) });
    pos = next;
  }
  return parts;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function listen(server: Server, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

/** Stop accepting, drop keep-alive and in-flight connections, and wait for the listener to close. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Monotonic integer generator. */
export function counter(start = 1): () => number {
  let n = start;
  return () => n++;
}

export function randomToken(len = 12): string {
  const abc = 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789';
  let s = '';
  for (let i = 0; i < len; i++) s += abc[Math.floor(Math.random() * abc.length)];
  return s;
}
