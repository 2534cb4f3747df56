import { AppError } from '../errors.js';
import { engineA } from './engine-a.js';
import { engineB } from './engine-b.js';
import { engineC } from './engine-c.js';
import { engineD } from './engine-d.js';
import type { EngineDefinition } from './types.js';

/** The one table of engines: id → definition. The only place in core that names an engine. */
export const engineDefinitions: Readonly<Record<string, EngineDefinition>> = {
  [engineA.id]: engineA,
  [engineB.id]: engineB,
  [engineC.id]: engineC,
  [engineD.id]: engineD,
};

export const engineIds = Object.keys(engineDefinitions) as [string, ...string[]];

export function getEngine(id: string): EngineDefinition {
  const def = engineDefinitions[id];
  if (!def) throw new AppError('engine_unknown', `unknown engine '${id}', available: ${engineIds.join(', ')}`);
  return def;
}
