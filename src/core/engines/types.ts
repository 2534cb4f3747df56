import type { ServiceConfig } from '../config/schema.js';

/**
 * An engine is data plus pure functions: how to find and invoke its CLI, how to read its output.
 * All process handling lives in runner.ts.
 */
export interface EngineDefinition {
  /** Config value of `engine`, e.g. 'engine_b'. */
  readonly id: string;
  /** The real program, for humans. */
  readonly title: string;
  /** Executable names looked up on PATH, in order of preference. */
  readonly binaries: readonly string[];
  /** npm package that ships the CLI, when there is one (for doctor hints). */
  readonly npmPackage?: string;
  /** Where the credentials come from, given the config and environment (doctor, and early turn errors). */
  credentialStatus(ctx: CredentialContext): CredentialStatus;
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
