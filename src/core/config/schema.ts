import { z } from 'zod';
import { describeEngineChoices, type EngineName, resolveEngineName, withEngineKeys } from './engine-names.js';
import { CONFIG_LIMITS as LIMITS } from './limits.js';

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

/**
 * Turn sources that are not channels (`source` in activity records, metrics, the daily budget's
 * owner runs): a custom channel named so would pass for the owner (`terminal` is never refused
 * by the budget) or mix its records with theirs.
 */
export const RESERVED_CHANNEL_KEYS: readonly string[] = ['terminal', 'http', 'cron', 'api', 'dashboard', 'system', 'service'];

/**
 * A custom channel key: lower-case letters, digits, `_` and `-`, starting with a letter or a
 * digit (entries such as `allow: ["<channel>:<id>"]` split at the first `:`), and not reserved.
 */
export function checkCustomChannelKey(key: string): string | undefined {
  if (RESERVED_CHANNEL_KEYS.includes(key)) return `"${key}" is reserved (${RESERVED_CHANNEL_KEYS.join(', ')} name the owner's own sources); pick another key`;
  if (!/^[a-z0-9][a-z0-9_-]{0,39}$/.test(key)) {
    return 'a custom channel key uses lower-case letters, digits, "_" and "-" (at most 40, starting with a letter or a digit)';
  }
  return undefined;
}

/**
 * The schema for these parts, built once per parts and mode: building it costs milliseconds, and
 * zod compiles an object schema's fast path on its first use, so each PATCH and each load of
 * service.yaml reuses the same one.
 */
export function createConfigSchema(parts: ConfigSchemaParts, opts: ConfigSchemaOptions = {}): ConfigSchema {
  const coerce = opts.coerceScalars ?? false;
  const modes = built.get(parts) ?? new Map<boolean, ConfigSchema>();
  built.set(parts, modes);
  const schema = modes.get(coerce) ?? buildConfigSchema(parts, coerce);
  modes.set(coerce, schema);
  return schema;
}

const built = new WeakMap<ConfigSchemaParts, Map<boolean, ConfigSchema>>();

function buildConfigSchema(parts: ConfigSchemaParts, coerceScalars: boolean) {
  const f = fieldBuilders(coerceScalars);
  // Every string and list has a bound (limits.ts): a file or a PATCH past one names the field and the limit.
  const text = () => z.string().max(LIMITS.text);
  const url = (protocols: { protocol: RegExp; error?: string }) => z.url(protocols).max(LIMITS.text);
  const list = <T extends z.ZodType>(item: T, max: number = LIMITS.listItems) => z.array(item).max(max);
  const map = <T extends z.ZodType>(value: T, max: number, what: string) =>
    z.record(text(), value).refine((m) => Object.keys(m).length <= max, { message: `must have at most ${max} ${what}` });

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
    allowedPaths: list(text()).optional(),
    deniedPaths: list(text()).optional(),
    allowedCommands: list(text()).optional(),
    deniedCommands: list(text()).optional(),
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

  // A task runs on a cron `schedule`, or once `at` a time (and is then removed: /remind, POST /api/tasks).
  const task = z
    .strictObject({
      id: text()
        .min(1)
        .regex(/^[A-Za-z0-9._-]+$/, 'use letters, digits, dot, dash or underscore'),
      name: text().min(1),
      schedule: text().min(1).optional(),
      at: text().min(1).optional(),
      prompt: text().min(1),
      enabled: f.bool().default(true),
      target: z.strictObject({ channel: text().min(1), chatId: text().min(1) }).optional(),
    })
    .superRefine(checkTaskTiming);

  const customAdapter = z.looseObject({
    _adapter: z
      .string({
        error: (iss) =>
          iss.input === undefined
            ? `unknown channel; use one of ${Object.keys(parts.channels).join(', ')}, or add an \`_adapter\` field naming a custom adapter module`
            : undefined,
      })
      .min(1)
      .max(LIMITS.text),
  });

  const knownChannels = Object.fromEntries(Object.entries(parts.channels).map(([key, schema]) => [key, schema.optional()]));
  const channels = z
    .object(knownChannels)
    .catchall(customAdapter)
    .superRefine(
      (value, ctx) => {
        for (const key of Object.keys(value ?? {})) {
          if (Object.hasOwn(parts.channels, key)) continue;
          const problem = checkCustomChannelKey(key);
          if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
        }
      },
      // The keys are checked even when a block has problems of its own: every problem at once.
      { when: (payload) => payload.value !== null && typeof payload.value === 'object' },
    );

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
    url: text()
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
    role: text().optional(),
    displayName: text().optional(),
    tone: text().optional(),
    boundaries: list(text(), LIMITS.boundaries).optional(),
  });

  const providerEndpoint = {
    baseUrl: url({ protocol: /^https?$/, error: 'expected an http(s) URL' }).optional(),
    apiKey: text().optional(),
    model: text().optional(),
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
    models: byEngine(text()).optional(),
    fallback: fallback.optional(),
    failoverThreshold: f.int(1).default(3),
  });

  // Who may drive the agent from the channels (src/channels/access/). Entries are
  // "<channel>:<id>"; only `allow` takes "<channel>:*" (everyone on that channel).
  const accessId = (wildcard: boolean) =>
    text()
      .regex(/^[^:\s]+:\S+$/, 'expected "<channel>:<id>"')
      .refine((v) => wildcard || !v.endsWith(':*'), { message: 'name one user or chat here; "<channel>:*" is only for access.allow' });
  const policy = z.enum(['pairing', 'allowlist', 'open']);
  const access = z.strictObject({
    dm: policy.default('pairing'),
    groups: policy.default('pairing'),
    allow: list(accessId(true), LIMITS.accessEntries).default([]),
    chats: list(accessId(false), LIMITS.accessEntries).default([]),
    admins: list(accessId(false), LIMITS.accessEntries).default([]),
    rateLimit: z.strictObject({ messages: f.int(0).default(20), perSeconds: f.num(0).default(60) }).prefault({}),
    dailyBudgetUsd: f.num(0, true).default(0),
    // What a running turn holds of the daily budget (core/access/budget-holds.ts); 0 = the most a recent turn cost.
    reservePerTurnUsd: f.num(0, true).default(0),
  });

  const gateway = z.strictObject({
    port: f.int(0, 65535).default(3000),
    host: text().min(1).default('127.0.0.1'),
    token: text().min(1).optional(),
  });

  // MCP servers by name, in the shape every engine's native config can express:
  // a local command (stdio) or a remote URL (streamable HTTP / SSE).
  const mcpServer = z.union([
    z.strictObject({
      command: text().min(1),
      args: list(text()).default([]),
      env: map(text(), LIMITS.mapEntries, 'variables').default({}),
    }),
    z.strictObject({
      url: url({ protocol: /^https?$/ }),
      type: z.enum(['http', 'sse']).default('http'),
      headers: map(text(), LIMITS.mapEntries, 'headers').default({}),
    }),
  ]);

  return z.strictObject({
    name: text().min(1),
    engine: engineId,
    model: text().min(1).optional(),
    skipPermissions: f.bool().default(true),
    // With skipPermissions false: how long a person has to answer an engine's permission request (then it is denied).
    approvalTimeoutSeconds: f.num(0).default(300),
    timeout: f.num(0).default(600),
    maxConcurrent: f.int(1).default(10),
    maxQueuePerSession: f.int(0).default(3),
    // Turns one person in a chat (not an admin) may have admitted at once: one member's turns waiting on unanswered approvals never hold every slot.
    maxTurnsPerPerson: f.int(1).default(2),
    sessionTtlDays: f.num(0).default(30),
    // Tasks a chat member (not an admin) may keep for their chat (/remind, /task add).
    maxTasksPerChat: f.int(0).default(10),
    // How long a reply a platform refused is retried from the persistent outbox before it is given up.
    replyRetryHours: f.num(0).default(24),
    systemPrompt: text().optional(),
    permissions: permissions.optional(),
    streaming: streaming.prefault({}),
    groupChat: groupChat.prefault({}),
    tasks: list(task, LIMITS.tasks).default([]).superRefine(checkUniqueTaskIds),
    channels: channels.prefault({}),
    inbox: inbox.prefault({}),
    historyFetch: historyFetch.prefault({}),
    store: store.prefault({}),
    oauthToken: text().min(1).optional(),
    persona: persona.optional(),
    provider: provider.optional(),
    gateway: gateway.prefault({}),
    access: access.prefault({}),
    mcp: map(mcpServer, LIMITS.mcpServers, 'servers').optional(),
    // Engine-owned blocks: validated here, typed only in their engine (absent from ServiceConfig's type).
    ...Object.fromEntries(Object.entries(parts.engineOptions ?? {}).map(([key, schema]) => [key, schema(f).prefault({})])),
  });
}

export type ConfigSchema = ReturnType<typeof buildConfigSchema>;

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

function checkTaskTiming(t: { schedule?: string | undefined; at?: string | undefined }, ctx: z.RefinementCtx): void {
  if (t.schedule === undefined && t.at === undefined)
    ctx.addIssue({ code: 'custom', path: ['schedule'], message: 'required: a cron expression (or `at`: a time, for a task that runs once)' });
  if (t.schedule !== undefined && t.at !== undefined) ctx.addIssue({ code: 'custom', path: ['at'], message: 'give `schedule` or `at`, not both' });
}

function checkUniqueTaskIds(tasks: Array<{ id: string }>, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  tasks.forEach((t, i) => {
    if (seen.has(t.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate task id "${t.id}"` });
    seen.add(t.id);
  });
}
