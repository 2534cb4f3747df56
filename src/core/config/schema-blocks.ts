import { z } from 'zod';
import { describeEngineChoices, type EngineName, resolveEngineName, withEngineKeys } from './engine-names.js';
import { CONFIG_LIMITS as LIMITS } from './limits.js';

/**
 * The blocks of service.yaml's schema, one builder each; schema.ts composes them. Every string
 * and list has a bound (limits.ts): a file or a PATCH past one names the field and the limit.
 */
export const boundedText = () => z.string().max(LIMITS.text);
const text = boundedText;
const url = (protocols: { protocol: RegExp; error?: string }) => z.url(protocols).max(LIMITS.text);
const list = <T extends z.ZodType>(item: T, max: number = LIMITS.listItems) => z.array(item).max(max);
const map = <T extends z.ZodType>(value: T, max: number, what: string) =>
  z.record(text(), value).refine((m) => Object.keys(m).length <= max, { message: `must have at most ${max} ${what}` });

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

/** `engine`: an engine id, or a name for one (the program's: `claude`), read as the id; and records keyed by engine. */
export function engineFields(engines: readonly [string, ...string[]], names?: readonly EngineName[]) {
  const engineNames = names ?? engines.map((id) => ({ id, title: id, aliases: [] }));
  const choices = describeEngineChoices(engineNames);
  const engineId = z.preprocess(
    (v) => resolveEngineName(v, engineNames) ?? v,
    z.enum(engines, {
      error: (iss) => (iss.input === undefined ? `required (one of ${choices})` : `expected one of ${choices}, got ${JSON.stringify(iss.input)}`),
    }),
  );
  const byEngine = <T extends z.ZodType>(value: T) =>
    z.preprocess(
      (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? withEngineKeys(v as Record<string, unknown>, engineNames) : v),
      z.partialRecord(z.enum(engines), value),
    );
  return { engineId, byEngine };
}

export const permissionsBlock = () =>
  z.strictObject({
    allowedPaths: list(text()).optional(),
    deniedPaths: list(text()).optional(),
    allowedCommands: list(text()).optional(),
    deniedCommands: list(text()).optional(),
  });

export const streamingBlock = (f: FieldBuilders) =>
  z.strictObject({
    mode: z.enum(['buffered', 'streaming']).default('buffered'),
    showToolCalls: f.bool().default(false),
    // buffered: a turn longer than this gets one short "working on it" note (0 = never).
    progressAfterSeconds: f.num(0, true).default(20),
  });

// Voice notes from the channels → text, through an OpenAI-compatible POST {baseUrl}/audio/transcriptions.
export const transcriptionBlock = (f: FieldBuilders) =>
  z.strictObject({
    baseUrl: url({ protocol: /^https?$/, error: 'expected an http(s) URL' }),
    apiKey: text().optional(),
    model: text().min(1).default('whisper-1'),
    // A hint for the spoken language (ISO-639-1, e.g. "en"); absent: the service detects it.
    language: text().optional(),
    timeoutSeconds: f.num(0).default(60),
  });

export const groupChatBlock = (f: FieldBuilders) =>
  z.strictObject({
    groupPolicy: z.enum(['mention-only', 'smart', 'always']).default('mention-only'),
    historyLimit: f.int(0).default(20),
    maxTurns: f.int(1).default(10),
  });

// A task runs on a cron `schedule`, or once `at` a time (and is then removed: /remind, POST /api/tasks).
export const tasksBlock = (f: FieldBuilders) =>
  list(
    z
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
      .superRefine(checkTaskTiming),
    LIMITS.tasks,
  )
    .default([])
    .superRefine(checkUniqueTaskIds);

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

/** `channels`: the registered channels' blocks (schemas handed in), and custom adapters by key. */
export function channelsBlock(known: Readonly<Record<string, z.ZodType<Record<string, unknown>>>>) {
  const customAdapter = z.looseObject({
    _adapter: z
      .string({
        error: (iss) =>
          iss.input === undefined
            ? `unknown channel; use one of ${Object.keys(known).join(', ')}, or add an \`_adapter\` field naming a custom adapter module`
            : undefined,
      })
      .min(1)
      .max(LIMITS.text),
  });
  const knownChannels = Object.fromEntries(Object.entries(known).map(([key, schema]) => [key, schema.optional()]));
  return z
    .object(knownChannels)
    .catchall(customAdapter)
    .superRefine(
      (value, ctx) => {
        for (const key of Object.keys(value ?? {})) {
          if (Object.hasOwn(known, key)) continue;
          const problem = checkCustomChannelKey(key);
          if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
        }
      },
      // The keys are checked even when a block has problems of its own: every problem at once.
      { when: (payload) => payload.value !== null && typeof payload.value === 'object' },
    );
}

export const inboxBlock = (f: FieldBuilders) =>
  z.strictObject({
    enabled: f.bool().default(false),
    retentionDays: f.num(0).default(7),
  });

export const historyFetchBlock = (f: FieldBuilders) =>
  z.strictObject({
    enabled: f.bool().default(false),
    pollIntervalMinutes: f.num(0).default(15),
    initialLookbackMinutes: f.num(0, true).default(60),
  });

// Engine processes kept between turns, one per active conversation (core/engines/warm/).
export const warmBlock = (f: FieldBuilders) =>
  z.strictObject({
    enabled: f.bool().default(true),
    maxProcesses: f.int(0, 1_000).default(4),
    idleSeconds: f.num(0).default(600),
  });

// Where the state lives: the embedded SQLite file by default; a PostgreSQL server with `url`
// (assistants on several hosts). `schema` defaults to one derived from `name` (see store/open-store.ts).
export const storeBlock = (f: FieldBuilders) =>
  z.strictObject({
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

export const personaBlock = () =>
  z.strictObject({
    role: text().optional(),
    displayName: text().optional(),
    tone: text().optional(),
    boundaries: list(text(), LIMITS.boundaries).optional(),
  });

/** `provider`; `byEngine` reads `models`' keys as engine ids (engineFields). */
export function providerBlock(f: FieldBuilders, byEngine: ReturnType<typeof engineFields>['byEngine']) {
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
  return z.strictObject({
    ...providerEndpoint,
    models: byEngine(text()).optional(),
    fallback: fallback.optional(),
    failoverThreshold: f.int(1).default(3),
  });
}

// Who may drive the agent from the channels (src/channels/access/). Entries are
// "<channel>:<id>"; only `allow` takes "<channel>:*" (everyone on that channel).
export function accessBlock(f: FieldBuilders) {
  const accessId = (wildcard: boolean) =>
    text()
      .regex(/^[^:\s]+:\S+$/, 'expected "<channel>:<id>"')
      .refine((v) => wildcard || !v.endsWith(':*'), { message: 'name one user or chat here; "<channel>:*" is only for access.allow' });
  const policy = z.enum(['pairing', 'allowlist', 'open']);
  return z.strictObject({
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
}

export const gatewayBlock = (f: FieldBuilders) =>
  z.strictObject({
    port: f.int(0, 65535).default(3000),
    host: text().min(1).default('127.0.0.1'),
    token: text().min(1).optional(),
    // One JSON object per log line instead of text (--log-format and SERVICE_LOG_FORMAT win over it).
    logFormat: z.enum(['text', 'json']).default('text'),
  });

// GET /metrics (Prometheus text format): behind the token unless `public` (a scraper on a private network).
export const metricsBlock = (f: FieldBuilders) =>
  z.strictObject({
    public: f.bool().default(false),
  });

// MCP servers by name, in the shape every engine's native config can express:
// a local command (stdio) or a remote URL (streamable HTTP / SSE).
export const mcpBlock = () =>
  map(
    z.union([
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
    ]),
    LIMITS.mcpServers,
    'servers',
  );

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
