import type { z } from 'zod';

/**
 * A channel is a platform adapter defined by data: its key in service.yaml, its option schema
 * (validated with the rest of the config in one pass) and a factory that imports the SDK lazily.
 */
export interface ChannelDefinition<Opts extends Record<string, unknown> = Record<string, unknown>> {
  /** Key under `channels:` in service.yaml, e.g. 'channel_e'. */
  readonly name: string;
  /** The platform's name, for logs and docs. */
  readonly title: string;
  /** SDK package the adapter needs (checked by `service doctor`). */
  readonly sdkPackage: string;
  readonly options: z.ZodType<Opts>;
}

/** Identity helper that keeps the options type of a definition. */
export function defineChannel<Opts extends Record<string, unknown>>(def: ChannelDefinition<Opts>): ChannelDefinition<Opts> {
  return def;
}
