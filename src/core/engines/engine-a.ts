import { findCredential } from './credentials.js';
import type { EngineDefinition } from './types.js';

/** engine_a: the Cursor agent CLI (`agent`, formerly `cursor-agent`). Not on npm; installed by the vendor's script. */
export const engineA: EngineDefinition = {
  id: 'engine_a',
  title: 'Cursor agent CLI',
  binaries: ['agent', 'cursor-agent'],
  credentialStatus: (ctx) =>
    findCredential(ctx, {
      vars: ['CURSOR_API_KEY'],
      loginFiles: ['.cursor/cli-config.json', '.config/cursor/auth.json'],
      loginCommand: 'agent login',
    }),
};
