import { findCredential } from './credentials.js';
import type { EngineDefinition } from './types.js';

/** engine_b: Claude Code (`claude`, npm @anthropic-ai/claude-code). */
export const engineB: EngineDefinition = {
  id: 'engine_b',
  title: 'Claude Code',
  binaries: ['claude'],
  npmPackage: '@anthropic-ai/claude-code',
  credentialStatus: (ctx) =>
    ctx.config.oauthToken
      ? { ok: true, detail: 'oauthToken in service.yaml (subscription token)' }
      : findCredential(ctx, {
          vars: ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_AUTH_TOKEN'],
          loginFiles: ['.claude/.credentials.json'],
          loginCommand: 'claude login',
        }),
};
