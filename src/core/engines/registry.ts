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

/** Ids of the engines with a capability, for messages ("only engine_x does"). */
export function enginesWith(capability: 'nativeCommands' | 'honoursPermissions'): string {
  return Object.values(engineDefinitions)
    .filter((e) => e[capability])
    .map((e) => e.id)
    .join(', ');
}

export function getEngine(id: string): EngineDefinition {
  const def = engineDefinitions[id];
  if (!def) throw new AppError('engine_unknown', `unknown engine '${id}', available: ${engineIds.join(', ')}`);
  return def;
}
