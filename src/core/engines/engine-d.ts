import path from 'node:path';
import { findCredential } from './credentials.js';
import type { EngineDefinition } from './types.js';

/** engine_d: Codex CLI (`codex`, npm @openai/codex). */
export const engineD: EngineDefinition = {
  id: 'engine_d',
  title: 'Codex CLI',
  binaries: ['codex'],
  npmPackage: '@openai/codex',
  credentialStatus: (ctx) =>
    findCredential(ctx, {
      vars: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
      loginFiles: [ctx.env.CODEX_HOME ? path.join(ctx.env.CODEX_HOME, 'auth.json') : '.codex/auth.json'],
      loginCommand: 'codex login',
    }),
};
