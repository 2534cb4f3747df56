import { describeEngine, describeEngineChoices, resolveEngineName } from '../config/engine-names.js';
import { AppError } from '../errors.js';
import { acpAgent } from './acp.js';
import { claudeCode } from './claude-code.js';
import { codex } from './codex.js';
import { cursorAgent } from './cursor-agent.js';
import { geminiCli } from './gemini-cli.js';
import { opencode } from './opencode.js';
import { qwenCode } from './qwen-code.js';
import type { EngineDefinition } from './types.js';

/** The one table of engines: id → definition. With the definitions themselves, the only place in core that names an engine. */
export const engineDefinitions: Readonly<Record<string, EngineDefinition>> = Object.fromEntries(
  [cursorAgent, claudeCode, opencode, codex, geminiCli, qwenCode, acpAgent].map((e) => [e.id, e]),
);

export const engineIds = Object.keys(engineDefinitions) as [string, ...string[]];

/**
 * The order `service init` suggests installed engines in: the ones that run headless most reliably
 * (and quickest) first; a generic ACP agent last, since it runs only what acp.command names.
 */
export const enginePreference: readonly string[] = [claudeCode, codex, opencode, geminiCli, qwenCode, cursorAgent, acpAgent].map((e) => e.id);

/** The id an engine name stands for: an id, or a program's name (`claude` → engine_b); undefined for neither. */
export function resolveEngineId(name: string): string | undefined {
  return resolveEngineName(name, Object.values(engineDefinitions));
}

/** Every engine id with its program and aliases, for messages that list them. */
export function describeEngineIds(): string {
  return describeEngineChoices(Object.values(engineDefinitions));
}

/** The engines with a capability, each with its program, for messages ("only engine_c (OpenCode) does"). */
export function enginesWith(capability: 'nativeCommands' | 'honoursPermissions'): string {
  const all = Object.values(engineDefinitions);
  return all
    .filter((e) => e[capability])
    .map((e) => describeEngine(e.id, all))
    .join(', ');
}

/** The definition of an engine id or name; an unknown one is an error listing them all. */
export function getEngine(name: string): EngineDefinition {
  const id = resolveEngineId(name);
  const def = id === undefined ? undefined : engineDefinitions[id];
  if (!def) throw new AppError('engine_unknown', `unknown engine '${name}'; use one of ${describeEngineIds()}`);
  return def;
}
