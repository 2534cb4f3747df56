import { channelOptionSchemas } from './channels/registry.js';
import { loadConfig, type ConfigCheck, type LoadedConfig } from './core/config/load.js';
import type { ConfigSchemaParts } from './core/config/schema.js';
import { engineDefinitions, engineIds } from './core/engines/registry.js';
import { checkTaskSchedules } from './core/scheduler/cron.js';

/**
 * The composition point of the two registries: the config schema parts (engine ids and channel
 * option schemas) handed to core as data, so core never imports a channel module.
 */
export function configParts(): ConfigSchemaParts {
  const engineOptions = Object.fromEntries(Object.values(engineDefinitions).flatMap((e) => (e.options ? [[e.options.key, e.options.schema]] : [])));
  const engineNames = Object.values(engineDefinitions).map(({ id, title, aliases }) => ({ id, title, aliases }));
  return { engines: engineIds, engineNames, channels: channelOptionSchemas(), engineOptions };
}

/** Checks beyond the schema, contributed by their owners: each engine's (a model format...) and the scheduler's (cron syntax). */
export const configChecks: readonly ConfigCheck[] = [
  ...Object.values(engineDefinitions).flatMap((e) => (e.checkConfig ? [e.checkConfig] : [])),
  checkTaskSchedules,
];

/** Load the assistant's service.yaml with every registered engine and channel. */
export function loadServiceConfig(dir: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  return loadConfig({ dir, parts: configParts(), checks: configChecks, env });
}
