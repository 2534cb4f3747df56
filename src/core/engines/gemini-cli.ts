import path from 'node:path';
import type { ServiceConfig } from '../config/schema.js';
import type { AgentEvent, FailureKind } from '../events.js';
import { createAcpResidentProtocol } from './acp-client.js';
import { findCredential } from './credentials.js';
import { promptWithImagePaths, toMcpServersJson } from './mcp.js';
import { createTextJoiner, isProviderStatus, num, obj, parseJsonLine, str } from './parse-helpers.js';
import type { LineParser } from './runner.js';
import type { EngineDefinition, EngineTurn } from './types.js';
import { syncSkillLinks, writeManagedSection, writeOwnedSettings } from './workspace-files.js';

/** Models `/model list` offers: Gemini CLI 0.61 has no listing command; its aliases and model names. */
const DOCUMENTED_MODELS = ['auto', 'pro', 'flash', 'flash-lite', 'gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-3-pro-preview', 'gemini-3-flash-preview'];

/** engine_e: Gemini CLI (`gemini`, npm @google/gemini-cli), driven headless with `--output-format stream-json`. */
export const geminiCli: EngineDefinition = {
  id: 'engine_e',
  title: 'Gemini CLI',
  aliases: ['gemini'],
  binaries: ['gemini'],
  npmPackage: '@google/gemini-cli',
  nativeCommands: false,
  honoursPermissions: false,

  credentialStatus: (ctx) =>
    findCredential(ctx, {
      vars: ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENAI_USE_VERTEXAI'],
      loginFiles: ['.gemini/oauth_creds.json'],
      loginCommand: 'gemini',
    }),

  prepareWorkspace(ws) {
    writeManagedSection(path.join(ws.dir, 'GEMINI.md'), ws.context);
    // Gemini CLI reads skills from .agents/skills as well as .gemini/skills (0.61: Storage.getProjectAgentSkillsDir).
    syncSkillLinks(path.join(ws.dir, '.agents', 'skills'), path.join(ws.dir, 'skills'), ws.skills);
    writeOwnedSettings(
      path.join(ws.dir, '.gemini', 'settings.json'),
      path.join(ws.stateDir, 'engines', 'engine_e-settings-owned.json'),
      ownedSettings(ws.config),
    );
  },

  buildInvocation(turn) {
    const args = ['--output-format', 'stream-json', '--approval-mode', turn.config.skipPermissions ? 'yolo' : 'default'];
    if (turn.sessionId) args.push('--resume', turn.sessionId);
    if (turn.model) args.push('--model', turn.model);
    return { args, env: geminiEnv(turn), stdin: promptWithImagePaths(turn.prompt, turn.images) };
  },

  createParser: createGeminiParser,

  // Resident: `gemini --acp`, its session kept open. 0.61 cannot load a session it did not start
  // (session/load clobbers it, docs/engines.md): a conversation with an older session runs per turn.
  warm: {
    resumes: false,
    buildInvocation: (turn) => ({ args: ['--acp', ...(turn.model ? ['--model', turn.model] : [])], env: geminiEnv(turn) }),
    createProtocol: (start) =>
      createAcpResidentProtocol({
        cwd: start.dir,
        ...(start.sessionId ? { sessionId: start.sessionId } : {}),
        // Gemini CLI reads its MCP servers from the settings file prepareWorkspace writes.
        mcpServers: [],
        allowPermissions: start.config.skipPermissions,
        promptOf: (turn) => promptWithImagePaths(turn.prompt, turn.images),
      }),
  },

  async listModels() {
    return { models: DOCUMENTED_MODELS, source: 'documented' };
  },
};

/**
 * The environment that points Gemini CLI at the turn's endpoint; shared with the acp engine, which
 * runs `gemini --acp` with the same variables.
 */
export function geminiEnv(turn: EngineTurn): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {
    // 0.61 re-launches itself as a child Node process (for a bigger heap) unless told not to: one start-up less per turn.
    GEMINI_CLI_NO_RELAUNCH: 'true',
    // The assistant directory is the user's own: trusted, so its .gemini/settings.json counts and yolo is not downgraded.
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
  };
  if (turn.endpoint?.baseUrl) env.GOOGLE_GEMINI_BASE_URL = turn.endpoint.baseUrl;
  const key = turn.endpoint?.apiKey ?? turn.apiKey;
  if (key) env.GEMINI_API_KEY = key;
  return env;
}

// --- internal ---

/**
 * Our keys in `.gemini/settings.json`. With a provider the auth type must be the API key: with only
 * GOOGLE_GEMINI_BASE_URL set, 0.61 picks the `gateway` type, which headless mode rejects (exit 41,
 * "Invalid auth method selected."). A system settings file would not need the workspace file, but
 * 0.61 skips one under any group- or world-writable directory (such as /tmp).
 */
function ownedSettings(config: ServiceConfig): Array<{ path: string[]; value: unknown }> {
  const out: Array<{ path: string[]; value: unknown }> = [];
  if (config.provider) {
    out.push({ path: ['security', 'auth', 'selectedType'], value: 'gemini-api-key' });
    // Default 10 attempts, 5-30 s apart: minutes before a dead endpoint fails and failover can act.
    out.push({ path: ['general', 'maxAttempts'], value: 3 });
  }
  for (const [name, server] of Object.entries(toMcpServersJson(config.mcp))) {
    const s = server as Record<string, unknown>;
    // Gemini CLI names remote servers by transport: httpUrl (streamable HTTP) or url (SSE).
    const value = 'command' in s ? s : { [s.type === 'sse' ? 'url' : 'httpUrl']: s.url, headers: s.headers };
    out.push({ path: ['mcpServers', name], value });
  }
  return out;
}

/**
 * `--output-format stream-json` of Gemini CLI 0.61 (fixtures in test/fixtures/engine_e). The session
 * id is only on `init`; assistant text arrives as deltas; there is no final text and no cost; a
 * failure is a `result` with status `error` or, before any JSON (unknown --resume id), stderr only.
 */
export function createGeminiParser(): LineParser {
  const joiner = createTextJoiner();
  let settled = false;
  let lastError: string | undefined;

  return {
    parseLine(line) {
      const d = parseJsonLine(line);
      if (!d) return [];
      switch (d.type) {
        case 'init': {
          const sessionId = str(d.session_id);
          return sessionId ? [{ type: 'session', sessionId }] : [];
        }
        case 'message':
          if (d.role !== 'assistant') return [];
          return joiner.text(str(d.content) ?? '', d.delta !== true);
        case 'tool_use':
          joiner.breakBlock();
          return [{ type: 'tool_call', callId: str(d.tool_id), name: str(d.tool_name) ?? 'tool', input: d.parameters ?? {} }];
        case 'tool_result': {
          const failed = d.status !== 'success';
          const output = str(d.output) ?? str(obj(d.error)?.message) ?? '';
          return [{ type: 'tool_result', callId: str(d.tool_id), output, isError: failed }];
        }
        case 'error': {
          const message = str(d.message) ?? 'error';
          if (d.severity === 'error') lastError = message;
          return [{ type: 'warning', message }];
        }
        case 'result':
          settled = true;
          return parseResult(d, lastError);
        default:
          return [];
      }
    },
    finish(exit) {
      if (settled) return [];
      // 0.61 exits 0 on SIGTERM: without a result line the turn did not finish, whatever the exit code.
      if (exit.code === 0) return [{ type: 'failure', kind: 'engine', message: 'Gemini CLI ended without a result' }];
      const notFound = /^Error resuming session: Invalid session identifier .*$/m.exec(exit.stderrTail)?.[0];
      const last = exit.stderrTail
        .split('\n')
        .filter((l) => l.trim() && !/^(Warning: 256-color|YOLO mode is enabled|Ripgrep is not available|\s+at )/.test(l))
        .pop()
        ?.trim();
      // 0.61 exit codes: 41 auth not configured, 42 bad input (an unknown --resume id), 52 config error.
      if (notFound) return [{ type: 'failure', kind: 'session_not_found', message: notFound }];
      return [{ type: 'failure', kind: 'engine', message: last ?? `gemini exited with code ${exit.code}` }];
    },
  };
}

function parseResult(d: Record<string, unknown>, lastError: string | undefined): AgentEvent[] {
  const stats = obj(d.stats);
  const out: AgentEvent[] = [{ type: 'usage', inputTokens: num(stats?.input_tokens), outputTokens: num(stats?.output_tokens) }];
  if (d.status === 'success') return out;
  const raw = str(obj(d.error)?.message) ?? lastError ?? 'Gemini CLI reported an error';
  const api = parseApiError(raw);
  const kind: FailureKind = api && (isProviderStatus(api.status) || /API_KEY_INVALID|UNAUTHENTICATED|PERMISSION_DENIED/.test(raw)) ? 'provider' : 'engine';
  out.push({ type: 'failure', kind, message: api ? `Gemini API error ${api.status}: ${api.message}` : raw, ...(api ? { status: api.status } : {}) });
  return out;
}

/** `[API Error: {"error":{"code":400,"message":"API key not valid…"}}]` → status and message; undefined for other errors. */
function parseApiError(raw: string): { status: number; message: string } | undefined {
  const m = /^\[API Error: ([\s\S]*)\]$/.exec(raw.trim());
  if (!m) return undefined;
  const body = parseJsonLine(m[1] ?? '');
  const error = obj(body?.error);
  const status = num(error?.code);
  if (status !== undefined) return { status, message: str(error?.message) ?? raw };
  const plain = /^(\d{3})\b\s*(.*)$/.exec(m[1] ?? '');
  return plain ? { status: Number(plain[1]), message: plain[2] || raw } : undefined;
}
