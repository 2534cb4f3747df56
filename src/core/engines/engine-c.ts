import { findCredential } from './credentials.js';
import type { EngineDefinition } from './types.js';

/** Provider prefix of an engine_c model (`anthropic/claude-…`) → the variable OpenCode reads for it. */
const PROVIDER_VARS: Record<string, string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  openrouter: 'OPENROUTER_API_KEY',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY',
  groq: 'GROQ_API_KEY',
  mistral: 'MISTRAL_API_KEY',
  xai: 'XAI_API_KEY',
  deepseek: 'DEEPSEEK_API_KEY',
};

/** engine_c: OpenCode (`opencode`, npm opencode-ai). */
export const engineC: EngineDefinition = {
  id: 'engine_c',
  title: 'OpenCode',
  binaries: ['opencode'],
  npmPackage: 'opencode-ai',
  credentialStatus: (ctx) => {
    const prefix = (ctx.config.model ?? '').split('/')[0] ?? '';
    const providerVar = PROVIDER_VARS[prefix];
    return findCredential(ctx, {
      vars: providerVar ? [providerVar] : Object.values(PROVIDER_VARS),
      loginFiles: ['.local/share/opencode/auth.json'],
      loginCommand: 'opencode auth login',
    });
  },
};
