import { z } from 'zod';
import type { RouteTable, ServerDeps } from '../types.js';
import { readValidated } from '../body.js';
import { sessionKey } from './chat.js';

/** POST /reset (sessionKey required) and POST /abort (sessionKey optional: `default`; an empty body is fine). */
export function registerSessionRoutes(table: RouteTable, deps: ServerDeps): void {
  table.add('POST', '/reset', async (event) => {
    const body = await readValidated(event, z.strictObject({ sessionKey }), { limit: deps.maxBodyBytes });
    await deps.assistant.reset(body.sessionKey);
    return { ok: true };
  });

  table.add('POST', '/abort', async (event) => {
    const body = await readValidated(event, z.strictObject({ sessionKey: sessionKey.optional() }), { limit: deps.maxBodyBytes, allowEmpty: true });
    return { ok: true, aborted: deps.assistant.abort(body.sessionKey ?? 'default') };
  });
}
