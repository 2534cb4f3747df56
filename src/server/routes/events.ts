import type { ActivityRecord } from '../../core/store/types.js';
import { createAsyncQueue } from '../../core/util/async-queue.js';
import type { RouteTable, ServerDeps } from '../types.js';
import { httpError } from '../http.js';
import { streamJson } from '../sse.js';

/** GET /api/events: one `data:` line per processed message; subscribers are bounded and removed on disconnect. */
export function registerEventRoutes(table: RouteTable, deps: ServerDeps): void {
  const max = deps.maxEventSubscribers ?? 32;
  let subscribers = 0;
  table.add(
    'GET',
    '/api/events',
    (event) => {
      if (subscribers >= max) throw httpError(503, `too many event subscribers (limit: ${max})`);
      subscribers++;
      const queue = createAsyncQueue<ActivityRecord>();
      const off = deps.assistant.onActivity((r) => queue.push(r));
      let gone = false;
      const leave = () => {
        if (gone) return;
        gone = true;
        subscribers--;
        off();
        queue.end();
      };
      return streamJson(event, queue, { heartbeatMs: deps.heartbeatMs ?? 15_000, redact: table.redact, onClientGone: leave });
    },
    { stream: true },
  );
}
