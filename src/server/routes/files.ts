import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import type { FileEvent, StreamEvent } from '../../core/events.js';
import { identifyToken, presentedToken, tokensMatch } from '../auth.js';
import { HTTPResponse } from 'h3';
import { httpError, routeParam } from '../http.js';
import type { RouteTable, ServerDeps } from '../types.js';

/**
 * Files the agent sent, over HTTP. A turn's stream carries each as a `file` event whose `url`
 * is `/api/files/<id>/<name>?token=<file token>`: the file token is an HMAC of the file id under
 * the gateway token, good for that one file only, so the link can be opened where no
 * Authorization header can be set (a browser, a phone) without handing out the gateway token.
 * The gateway token as a Bearer header works too. Files are kept 24 h (core/files/sent-files.ts).
 */
export const FILES_PATH = '/api/files/';

/** The token in a file's URL: HMAC-SHA256 of its id under the gateway token (32 base64url characters). */
export function signFileId(gatewayToken: string, id: string): string {
  return createHmac('sha256', gatewayToken).update(`file:${id}`).digest('base64url').slice(0, 32);
}

export function fileUrl(gatewayToken: string, id: string, name: string): string {
  return `${FILES_PATH}${id}/${encodeURIComponent(name)}?token=${signFileId(gatewayToken, id)}`;
}

/** A turn's events as the wire carries them: a `file` event shows its `url`, never the local path. */
export async function* withFileUrls(events: AsyncIterable<StreamEvent>, gatewayToken: string): AsyncIterable<StreamEvent> {
  for await (const e of events) {
    if (e.type !== 'file') {
      yield e;
      continue;
    }
    const { id, path: _path, ...rest } = e;
    const wire: FileEvent = id ? { ...rest, url: fileUrl(gatewayToken, id, e.name) } : rest;
    yield wire;
  }
}

export function registerFileRoutes(table: RouteTable, deps: ServerDeps): void {
  // The app's token check lets this path through (it takes a file token in the query); the route decides.
  table.add('GET', `${FILES_PATH}:id/:name`, (event) => {
    const id = routeParam(event, 'id') ?? '';
    const header = presentedToken(event.req.headers.get('authorization') ?? undefined, event.url, false);
    const query = event.url.searchParams.get('token');
    const allowed =
      header !== undefined
        ? identifyToken(header, { gateway: deps.token, engine: deps.engineToken }) !== undefined
        : query !== null && tokensMatch(query, signFileId(deps.token, id));
    if (!allowed) {
      const none = header === undefined && query === null;
      throw httpError(401, none ? 'missing token' : 'invalid token', {}, { 'www-authenticate': 'Bearer realm="service"' }, none ? 'no token' : 'wrong token');
    }
    const name = routeParam(event, 'name');
    if (name === undefined) throw httpError(404, 'no such file');
    const file = deps.assistant.files.open(id, name);
    if (!file) throw httpError(404, 'no such file (files are kept for 24 hours)');
    // A node stream body: srvx pipes it to the response as it is (no web stream in between).
    return new HTTPResponse(fs.createReadStream('', { fd: file.fd }) as unknown as ConstructorParameters<typeof HTTPResponse>[0], {
      status: 200,
      statusText: 'OK',
      headers: {
        'content-type': file.mimeType,
        'content-length': String(file.size),
        'content-disposition': `attachment; filename="${file.name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(file.name)}`,
        'cache-control': 'private, no-store',
        'x-content-type-options': 'nosniff',
        // Opened in a browser anyway, a file (an HTML page the agent wrote) runs nothing.
        'content-security-policy': 'sandbox',
      },
    });
  });
}
