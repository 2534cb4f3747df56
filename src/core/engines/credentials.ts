import fs from 'node:fs';
import path from 'node:path';
import type { CredentialContext, CredentialStatus } from './types.js';

/** Credential lookup shared by the engine definitions: config first, then variables, then a CLI login file. */
export function findCredential(
  ctx: CredentialContext,
  spec: { vars: readonly string[]; loginFiles: readonly string[]; loginCommand: string },
): CredentialStatus {
  if (ctx.apiKey) return { ok: true, detail: 'API key passed to createAssistant({ apiKey })' };
  if (ctx.config.provider?.apiKey) return { ok: true, detail: 'provider.apiKey in service.yaml' };
  if (ctx.config.provider?.baseUrl && !ctx.config.provider.apiKey) {
    return { ok: true, detail: `provider.baseUrl ${ctx.config.provider.baseUrl} (no key configured; the endpoint decides)` };
  }
  const found = spec.vars.filter((v) => ctx.env[v]);
  if (found.length > 0) return { ok: true, detail: `environment variable ${found.join(', ')}` };
  for (const rel of spec.loginFiles) {
    const file = path.resolve(ctx.home, rel);
    if (fs.existsSync(file)) return { ok: true, detail: `login stored in ${file}` };
  }
  return {
    ok: false,
    detail: `no credentials: set ${spec.vars.join(' or ')}, set provider.apiKey in service.yaml, or run \`${spec.loginCommand}\``,
  };
}
