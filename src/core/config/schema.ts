import { z } from 'zod';
import { describeEngineChoices, type EngineName, resolveEngineName, withEngineKeys } from './engine-names.js';

/**
 * The one schema of service.yaml. It is built from the engine ids and the channel option schemas
 * handed in as data, so core never imports a channel module (STYLE §2.1). Every default of the
 * spec's configuration table lives here, nowhere else.
 */
export interface ConfigSchemaParts {
  engines: readonly [string, ...string[]];
  /** Each engine's program and the other names `engine` accepts for it (`claude` for engine_b); messages name the program beside each id. */
  engineNames?: readonly EngineName[];
  /** channel key → schema of that channel's block (strict objects). */
  channels: Readonly<Record<string, z.ZodType<Record<string, unknown>>>>;
  /**
   * Top-level option blocks that engines own (engine_d's `codex:`), key → schema. Core validates
   * them in the same pass but never reads them: the owning engine does (its typed reader).
   */
  engineOptions?: Readonly<Record<string, (f: FieldBuilders) => z.ZodType>>;
}

export interface ConfigSchemaOptions {
  /**
   * Accept numbers and booleans written as strings. On for files, where `${PORT}` resolves to
   * text; off for API bodies, where a wrong JSON type is the client's error.
   */
  coerceScalars?: boolean;
}

export function createConfigSchema(parts: ConfigSchemaParts, opts: ConfigSchemaOptions = {}) {
  const f = fieldBuilders(opts.coerceScalars ?? false);

  // An engine id, or a name for one (the program's: `claude`), read as the id.
  const engineNames = parts.engineNames ?? parts.engines.map((id) => ({ id, title: id, aliases: [] }));
  const choices = describeEngineChoices(engineNames);
  const engineId = z.preprocess(
    (v) => resolveEngineName(v, engineNames) ?? v,
    z.enum(parts.engines, {
      error: (iss) => (iss.input === undefined ? `required (one of ${choices})` : `expected one of ${choices}, got ${JSON.stringify(iss.input)}`),
    }),
  );
  const byEngine = <T extends z.ZodType>(value: T) =>
    z.preprocess(
      (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? withEngineKeys(v as Record<string, unknown>, engineNames) : v),
      z.partialRecord(z.enum(parts.engines), value),
    );

  const permissions = z.strictObject({
    allowedPaths: z.array(z.string()).optional(),
    deniedPaths: z.array(z.string()).optional(),
    allowedCommands: z.array(z.string()).optional(),
    deniedCommands: z.array(z.string()).optional(),
  });

  const streaming = z.strictObject({
    mode: z.enum(['buffered', 'streaming']).default('buffered'),
    showToolCalls: f.bool().default(false),
  });

  const groupChat = z.strictObject({
    groupPolicy: z.enum(['mention-only', 'smart', 'always']).default('mention-only'),
    historyLimit: f.int(0).default(20),
    maxTurns: f.int(1).default(10),
  });

  const task = z.strictObject({
    id: z
      .string()
      .min(1)
      .regex(/^[A-Za-z0-9._-]+$/, 'use letters, digits, dot, dash or underscore'),
    name: z.string().min(1),
    schedule: z.string().min(1),
    prompt: z.string().min(1),
    enabled: f.bool().default(true),
    target: z.strictObject({ channel: z.string().min(1), chatId: z.string().min(1) }).optional(),
  });

  const customAdapter = z.looseObject({
    _adapter: z
      .string({
        error: (iss) =>
          iss.input === undefined
            ? `unknown channel; use one of ${Object.keys(parts.channels).join(', ')}, or add an \`_adapter\` field naming a custom adapter module`
            : undefined,
      })
      .min(1),
  });

  const knownChannels = Object.fromEntries(Object.entries(parts.channels).map(([key, schema]) => [key, schema.optional()]));
  const channels = z.object(knownChannels).catchall(customAdapter);

  const inbox = z.strictObject({
    enabled: f.bool().default(false),
    retentionDays: f.num(0).default(7),
  });

  const historyFetch = z.strictObject({
    enabled: f.bool().default(false),
    pollIntervalMinutes: f.num(0).default(15),
    initialLookbackMinutes: f.num(0, true).default(60),
  });

  // Where the state lives: the embedded SQLite file by default; a PostgreSQL server with `url`
  // (assistants on several hosts). `schema` defaults to one derived from `name` (see store/open-store.ts).
  const store = z.strictObject({
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\/\S+$/, 'expected a postgres:// or postgresql:// URL')
      .optional(),
    schema: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'use lower-case letters, digits and underscores (at most 63, not starting with a digit)')
      .optional(),
    // Gateways of one assistant sharing the server: how soon another takes over the channels and
    // the scheduler when the leader dies (see core/leader/leader-lease.ts). At least 1 s.
    failoverSeconds: f.num(1, true).default(15),
  });

  const persona = z.strictObject({
    role: z.string().optional(),
    displayName: z.string().optional(),
    tone: z.string().optional(),
    boundaries: z.array(z.string()).optional(),
  });

  const providerEndpoint = {
    baseUrl: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }).optional(),
    apiKey: z.string().optional(),
    model: z.string().optional(),
  };
  // The spec says a nested fallback is ignored: it is accepted and stripped (the loader warns).
  const fallback = z
    .object(providerEndpoint)
    .strict()
    .or(
      z
        .object({ ...providerEndpoint, fallback: z.unknown() })
        .strict()
        .transform(({ fallback: _f, ...rest }) => rest),
    );
  const provider = z.strictObject({
    ...providerEndpoint,
    models: byEngine(z.string()).optional(),
    fallback: fallback.optional(),
    failoverThreshold: f.int(1).default(3),
  });

  // Who may drive the agent from the channels (src/channels/access/). Entries are
  // "<channel>:<id>"; only `allow` takes "<channel>:*" (everyone on that channel).
  const accessId = (wildcard: boolean) =>
    z
      .string()
      .regex(/^[^:\s]+:\S+$/, 'expected "<channel>:<id>"')
      .refine((v) => wildcard || !v.endsWith(':*'), { message: 'name one user or chat here; "<channel>:*" is only for access.allow' });
  const policy = z.enum(['pairing', 'allowlist', 'open']);
  const access = z.strictObject({
    dm: policy.default('pairing'),
    groups: policy.default('pairing'),
    allow: z.array(accessId(true)).default([]),
    chats: z.array(accessId(false)).default([]),
    admins: z.array(accessId(false)).default([]),
    rateLimit: z.strictObject({ messages: f.int(0).default(20), perSeconds: f.num(0).default(60) }).prefault({}),
    dailyBudgetUsd: f.num(0, true).default(0),
  });

  const gateway = z.strictObject({
    port: f.int(0, 65535).default(3000),
    host: z.string().min(1).default('127.0.0.1'),
    token: z.string().min(1).optional(),
    // One JSON object per log line instead of text (--log-format and SERVICE_LOG_FORMAT win over it).
    logFormat: z.enum(['text', 'json']).default('text'),
  });

  // GET /metrics (Prometheus text format): behind the token unless `public` (a scraper on a private network).
  const metrics = z.strictObject({
    public: f.bool().default(false),
  });

  // MCP servers by name, in the shape every engine's native config can express:
  // a local command (stdio) or a remote URL (streamable HTTP / SSE).
  const mcpServer = z.union([
    z.strictObject({
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      env: z.record(z.string(), z.string()).default({}),
    }),
    z.strictObject({
      url: z.url({ protocol: /^https?$/ }),
      type: z.enum(['http', 'sse']).default('http'),
      headers: z.record(z.string(), z.string()).default({}),
    }),
  ]);

  return z.strictObject({
    name: z.string().min(1),
    engine: engineId,
    model: z.string().min(1).optional(),
    skipPermissions: f.bool().default(true),
    // With skipPermissions false: how long a person has to answer an engine's permission request (then it is denied).
    approvalTimeoutSeconds: f.num(0).default(300),
    timeout: f.num(0).default(600),
    maxConcurrent: f.int(1).default(10),
    maxQueuePerSession: f.int(0).default(3),
    sessionTtlDays: f.num(0).default(30),
    systemPrompt: z.string().optional(),
    permissions: permissions.optional(),
    streaming: streaming.prefault({}),
    groupChat: groupChat.prefault({}),
    tasks: z.array(task).default([]).superRefine(checkUniqueTaskIds),
    channels: channels.prefault({}),
    inbox: inbox.prefault({}),
    historyFetch: historyFetch.prefault({}),
    store: store.prefault({}),
    oauthToken: z.string().min(1).optional(),
    persona: persona.optional(),
    provider: provider.optional(),
    gateway: gateway.prefault({}),
    metrics: metrics.prefault({}),
    access: access.prefault({}),
    mcp: z.record(z.string(), mcpServer).optional(),
    // Engine-owned blocks: validated here, typed only in their engine (absent from ServiceConfig's type).
    ...Object.fromEntries(Object.entries(parts.engineOptions ?? {}).map(([key, schema]) => [key, schema(f).prefault({})])),
  });
}

export type ConfigSchema = ReturnType<typeof createConfigSchema>;

/** The validated configuration every subcommand works with. */
export type ServiceConfig = z.output<ConfigSchema>;
export type TaskConfig = ServiceConfig['tasks'][number];
export type ProviderConfig = NonNullable<ServiceConfig['provider']>;
export type McpServerConfig = NonNullable<ServiceConfig['mcp']>[string];
export type AccessConfig = ServiceConfig['access'];

/** Top-level keys that are extensions for the user's own tools: kept in the file, ignored by us. */
export const isExtensionKey = (key: string): boolean => key.startsWith('x-');

/** Scalar field schemas that accept text for numbers and booleans when reading a file (see coerceScalars). */
export type FieldBuilders = ReturnType<typeof fieldBuilders>;

export function fieldBuilders(coerce: boolean) {
  const asNumber = (v: unknown) => (coerce && typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v);
  const asBool = (v: unknown) => (coerce && (v === 'true' || v === 'false') ? v === 'true' : v);
  return {
    bool: () => z.preprocess(asBool, z.boolean()),
    /** A number above `min` (or at least `min` when `inclusive`). */
    num: (min: number, inclusive = false) => z.preprocess(asNumber, inclusive ? z.number().min(min) : z.number().gt(min)),
    int: (min: number, max = Number.MAX_SAFE_INTEGER) => z.preprocess(asNumber, z.number().int().min(min).max(max)),
  };
}

// --- internal ---

function checkUniqueTaskIds(tasks: Array<{ id: string }>, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  tasks.forEach((t, i) => {
    if (seen.has(t.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate task id "${t.id}"` });
    seen.add(t.id);
  });
}
