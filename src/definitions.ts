import { channelOptionSchemas } from './channels/registry.js';
import { loadConfig, type ConfigCheck, type LoadedConfig } from './core/config/load.js';
import type { ConfigSchemaParts } from './core/config/schema.js';
import { engineIds } from './core/engines/registry.js';

/**
 * The composition point of the two registries: the config schema parts (engine ids and channel
 * option schemas) handed to core as data, so core never imports a channel module.
 */
export function configParts(): ConfigSchemaParts {
  return { engines: engineIds, channels: channelOptionSchemas() };
}

export const configChecks: readonly ConfigCheck[] = [];

/** Load the assistant's service.yaml with every registered engine and channel. */
export function loadServiceConfig(dir: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  return loadConfig({ dir, parts: configParts(), checks: configChecks, env });
}
