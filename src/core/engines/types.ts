import type { z } from 'zod';
import type { HelperEndpoint } from '../approvals/approval-broker.js';
import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { ConfigCheck } from '../config/load.js';
import type { FieldBuilders, ServiceConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';
import type { Skill } from '../skills/skills.js';
import type { LineParser } from './runner.js';
import type { WarmMode } from './warm/protocol.js';

/**
 * An engine is data plus pure functions: how to find and invoke its CLI, which files it reads,
 * how to read its output. All process handling lives in runner.ts.
 */
export interface EngineDefinition {
  /** Config value of `engine`, e.g. 'engine_b'. */
  readonly id: string;
  /** The real program, for humans. */
  readonly title: string;
  /**
   * Other names accepted for `engine` (in service.yaml, `--engine`, `/engine`, PATCH): the
   * program's own name, as people call it (`claude`). What is written back is always `id`.
   */
  readonly aliases: readonly string[];
  /**
   * Executable names looked up on PATH, in order of preference. For an engine that runs a program
   * named in service.yaml (`configuredBinary`), the programs it knows to work with.
   */
  readonly binaries: readonly string[];
  /** The program named in the engine's own block of service.yaml (acp: `acp.command`), when it runs one. */
  configuredBinary?(config: ServiceConfig): string | undefined;
  /** What `service init` writes as the engine's own block, given the programs found on PATH (acp: the agent to run), and the program it names. */
  initOptions?(found: (binary: string) => boolean): { block: Record<string, unknown>; program: string } | undefined;
  /** npm package that ships the CLI, when there is one (for doctor hints). */
  readonly npmPackage?: string;
  /** Whether `POST /command` (a native command, not prompt text) is supported. */
  readonly nativeCommands: boolean;
  /** Whether `permissions` is enforced (the others parse it and warn once). */
  readonly honoursPermissions: boolean;
  /**
   * How the engine asks the person before a tool runs when `skipPermissions` is false (chat
   * approvals): `helper`, through our permission-prompt MCP helper, which reaches the turn over a
   * loopback endpoint; `conversation`, inside its own protocol (ACP `session/request_permission`,
   * engine_d's `codex app-server` `item/commandExecution/requestApproval`).
   * Absent: the engine has no headless way to ask, and tools that need permission are refused.
   */
  readonly approvals?: 'helper' | 'conversation';
  /** Where the credentials come from, given the config and environment (doctor, and early turn errors). */
  credentialStatus(ctx: CredentialContext): CredentialStatus;
  /** Problems only this engine can see in the config (model format...). */
  readonly checkConfig?: ConfigCheck;
  /** A top-level block of service.yaml that only this engine reads (engine_d: `codex`); changing it needs a restart. */
  readonly options?: EngineOptionsBlock;
  /** Write what the engine reads from the workspace (context file, skill links, permissions, MCP). */
  prepareWorkspace(ws: WorkspaceContext): void;
  /** argv, environment and stdin of one turn. */
  buildInvocation(turn: EngineTurn): EngineInvocation;
  /**
   * A fresh parser per run (parsers keep per-turn state). Engines that converse over stdin (ACP)
   * read the turn from it: the prompt and the session go through the conversation, not argv.
   */
  createParser(turn: EngineTurn): LineParser;
  /** Models for `/model list`: from the CLI where it offers a listing, else a documented list. */
  listModels(ctx: ModelListContext): Promise<ModelListing>;
  /** How the engine stays resident between turns (warm/); absent: every turn starts it. */
  readonly warm?: WarmMode;
}

export interface CredentialContext {
  config: ServiceConfig;
  env: NodeJS.ProcessEnv;
  home: string;
  /** An API key handed to createAssistant({ apiKey }). */
  apiKey?: string;
}

export interface CredentialStatus {
  ok: boolean;
  /** What was found, or what is missing and how to fix it. */
  detail: string;
}

export interface WorkspaceContext {
  dir: string;
  stateDir: string;
  config: ServiceConfig;
  skills: readonly Skill[];
  /** Rendered assistant context (markdown). */
  context: string;
  log: Logger;
}

/** The model endpoint a turn uses: the primary provider or its fallback. */
export interface ProviderEndpoint {
  baseUrl?: string;
  apiKey?: string;
  model?: string;
}

export interface EngineTurn {
  prompt: string;
  dir: string;
  stateDir: string;
  sessionId?: string;
  /** Absolute paths of image files for this turn. */
  images: readonly string[];
  /** A native command instead of a prompt (engines with nativeCommands only). */
  command?: { name: string; arguments?: string };
  config: ServiceConfig;
  /** The endpoint chosen for this turn (primary or fallback); absent without `provider`. */
  endpoint?: ProviderEndpoint;
  /** The model for this turn: provider.models[engine], endpoint model, else config.model. */
  model?: string;
  /** createAssistant({ apiKey }). */
  apiKey?: string;
  /** Whether this process runs as root (engine_b refuses to skip permissions as root without IS_SANDBOX). */
  isRoot: boolean;
  /** Chat approvals of this turn (skipPermissions false, engines with `approvals`). */
  approvals?: EngineApprovals;
  /**
   * Paths in the assistant directory this turn may neither read nor change (a non-admin started
   * it): `service.yaml`, `.env`, and folders ending in `/`. An engine with deny rules of its own
   * passes them on; every engine is checked after the turn anyway (core/guard/).
   */
  protectedPaths?: readonly string[];
}

/** What an engine that asks before running tools gets from its turn. */
export interface EngineApprovals {
  /** Ask the person; resolves with their decision (or a denial: timeout, abort, nobody to ask). */
  ask(request: ApprovalAsk): Promise<ApprovalVerdict>;
  /** For `approvals: 'helper'` engines: where their helper process asks, with this turn's secret. */
  helper?: HelperEndpoint;
}

export interface EngineInvocation {
  args: string[];
  /** Variables to set (string) or remove (undefined) on top of the inherited environment. */
  env: Record<string, string | undefined>;
  /** The prompt fed through stdin, for engines that read it there (no argv limit, not visible in ps). */
  stdin?: string;
}

export interface ModelListContext {
  binary: string;
  dir: string;
  env: NodeJS.ProcessEnv;
}

export interface ModelListing {
  models: string[];
  source: 'cli' | 'documented';
}

/** An engine's own block in service.yaml: its key and its schema (built with the loader's scalar rules). */
export interface EngineOptionsBlock<T = unknown> {
  key: string;
  schema(f: FieldBuilders): z.ZodType<T>;
}

/** The engine's block, typed: validated and defaulted when the config was loaded, read back through the same schema. */
export function readEngineOptions<T>(config: ServiceConfig, block: EngineOptionsBlock<T>, f: FieldBuilders): T {
  return block.schema(f).parse((config as Record<string, unknown>)[block.key] ?? {});
}
