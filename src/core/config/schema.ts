import { z } from 'zod';
import type { EngineName } from './engine-names.js';
import {
  accessBlock,
  boundedText,
  channelsBlock,
  engineFields,
  type FieldBuilders,
  fieldBuilders,
  gatewayBlock,
  metricsBlock,
  groupChatBlock,
  historyFetchBlock,
  inboxBlock,
  mcpBlock,
  permissionsBlock,
  personaBlock,
  providerBlock,
  storeBlock,
  streamingBlock,
  transcriptionBlock,
  tasksBlock,
  warmBlock,
} from './schema-blocks.js';

// Engines build their option blocks (`engineOptions`) with these, so they come with the schema.
export { type FieldBuilders, fieldBuilders } from './schema-blocks.js';

/**
 * The one schema of service.yaml. It is built from the engine ids and the channel option schemas
 * handed in as data, so core never imports a channel module (STYLE §2.1). Every default of the
 * spec's configuration table lives here and in the blocks it is composed of (schema-blocks.ts).
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
  const { engineId, byEngine } = engineFields(parts.engines, parts.engineNames);
  return z.strictObject({
    name: boundedText().min(1),
    engine: engineId,
    model: boundedText().min(1).optional(),
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
    systemPrompt: boundedText().optional(),
    permissions: permissionsBlock().optional(),
    streaming: streamingBlock(f).prefault({}),
    transcription: transcriptionBlock(f).optional(),
    groupChat: groupChatBlock(f).prefault({}),
    tasks: tasksBlock(f),
    channels: channelsBlock(parts.channels).prefault({}),
    inbox: inboxBlock(f).prefault({}),
    historyFetch: historyFetchBlock(f).prefault({}),
    warm: warmBlock(f).prefault({}),
    store: storeBlock(f).prefault({}),
    oauthToken: boundedText().min(1).optional(),
    persona: personaBlock().optional(),
    provider: providerBlock(f, byEngine).optional(),
    gateway: gatewayBlock(f).prefault({}),
    metrics: metricsBlock(f).prefault({}),
    access: accessBlock(f).prefault({}),
    mcp: mcpBlock().optional(),
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
