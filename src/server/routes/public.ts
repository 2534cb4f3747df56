import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { RouteTable, ServerDeps } from '../types.js';
import { HTTPResponse } from 'h3';
import { httpError, routeParam } from '../http.js';
import { readHealth } from '../health.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/**
 * Without the token: GET /health (liveness plus facts that are not secret, for the dashboard's
 * status panel) and the dashboard's static files. The page itself holds no data; it asks the
 * API for everything else once the operator gives it the token. The one library the page uses
 * (marked, for the chat's Markdown) is served from this package's own dependency, so the page
 * loads nothing from another host and the installed package needs no copy of it.
 */
export function registerPublicRoutes(table: RouteTable, deps: ServerDeps): void {
  // The gateway's listener answers a plain GET /health before this route (server/health.ts).
  table.add('GET', '/health', () => readHealth(deps));

  const serveFile = (rel: string) => {
    const root = path.resolve(deps.dashboardDir);
    const file = path.resolve(root, rel);
    if (!file.startsWith(root + path.sep)) throw httpError(404, 'not found');
    return serve(file, rel);
  };
  const serve = (file: string, name: string) => {
    let body: Buffer;
    try {
      body = fs.readFileSync(file);
    } catch {
      throw httpError(404, `no file ${name}`);
    }
    return new HTTPResponse(body, {
      status: 200,
      statusText: 'OK',
      headers: {
        'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        // The page runs only its own script and talks only to this origin.
        'content-security-policy':
          "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
      },
    });
  };
  table.add('GET', '/', () => serveFile('index.html'));
  table.add('GET', '/index.html', () => serveFile('index.html'));
  // marked's ES module build, as the package's `exports` name it (resolved once: it is a dependency).
  const marked = createRequire(import.meta.url).resolve('marked');
  table.add('GET', '/dashboard/vendor/marked.js', () => serve(marked, 'vendor/marked.js'));
  table.add('GET', '/dashboard/:file', (event) => {
    const file = routeParam(event, 'file');
    if (file === undefined) throw httpError(404, 'not found'); // `%` not followed by two hex digits names no file
    return serveFile(file);
  });
}
