import type { AccessAdmin } from '../core/access/access-admin.js';
import type { Assistant } from '../core/assistant/assistant.js';
import type { CommandTable } from '../core/commands/command-table.js';
import type { ChannelHub } from '../core/channel-hub.js';
import type { ConfigSource } from '../core/config/source.js';
import type { Logger } from '../core/logger.js';
import type { LiveMetrics } from '../core/metrics/live-metrics.js';
import type { TaskControl } from '../core/scheduler/task-control.js';
import type { ActivityStore, ReplyOutboxStore } from '../core/store/types.js';
import type { H3Event } from 'h3';

/** What the HTTP API is built from: everything it serves is handed in by the composition root. */
export interface ServerDeps {
  assistant: Assistant;
  /** The assistant's slash commands (POST /command refuses their names: they belong on POST /chat). */
  commands: Pick<CommandTable, 'list'>;
  config: ConfigSource;
  channels: ChannelHub;
  /** The scheduled tasks: list, run now, enable/disable, history (GET|POST /api/tasks...). */
  tasks: TaskControl;
  /** The activity queries the dashboard needs beyond what the assistant exposes (the state store). */
  activity: Pick<ActivityStore, 'recentActivity' | 'activityTimeline'>;
  /** Pairings and approvals (GET /api/access, approve, deny, revoke). */
  access: AccessAdmin;
  /** Replies waiting in the reply outbox (GET /api/status); none without channels. */
  replies?: Pick<ReplyOutboxStore, 'outboxStats'>;
  /** What this process counted (the `live` block of GET /api/status, and GET /metrics): the assistant records into the same object. */
  metrics: LiveMetrics;
  token: string;
  /** The engine's own token (SERVICE_TOKEN in its environment): send-only, see auth.ts engineMayCall. */
  engineToken?: string;
  log: Logger;
  version: string;
  /** Folder of the dashboard's static files. */
  dashboardDir: string;
  /** Idle time before an SSE stream gets a heartbeat comment (default 15 s). */
  heartbeatMs?: number;
  /** Concurrent GET /api/events subscribers (default 32). */
  maxEventSubscribers?: number;
  maxBodyBytes?: number;
  /** Peers for the dashboard's fleet panel. */
  fleet?: () => Array<Record<string, unknown>>;
}

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
/** An h3 handler: a plain object is answered as JSON (secrets masked); an HTTPResponse or a stream goes as it is. */
export type RouteHandler = (event: H3Event) => unknown;

export interface RouteOptions {
  /** The route streams (SSE): its HEAD answers the head only, without running the handler. */
  stream?: boolean;
}

/** How route modules add routes: also records methods per path, for 405 answers. */
export interface RouteTable {
  /** JSON a handler returns (an object, or a JSON Reply) leaves with every secret value masked. */
  add(method: Method, path: string, handler: RouteHandler, opts?: RouteOptions): void;
  /** Register a turn's stream, so shutdown can wait until its last event is written. */
  trackStream(finished: Promise<void>): void;
  /** Mask every secret value in what is about to be sent (streams call it per event). */
  redact<T>(value: T): T;
}
