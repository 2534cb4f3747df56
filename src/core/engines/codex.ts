import path from 'node:path';
import { z } from 'zod';
import { type FieldBuilders, fieldBuilders } from '../config/schema.js';
import type { AgentEvent } from '../events.js';
import { packageVersion } from '../paths.js';
import { classify, type CodexAppServerTurn, createCodexAppServerConversation, createCodexAppServerResident } from './codex-app-server.js';
import { findCredential } from './credentials.js';
import { createTextJoiner, num, obj, parseJsonLine, str, describeSilentFailure } from './parse-helpers.js';
import type { LineParser } from './runner.js';
import { type EngineDefinition, type EngineOptionsBlock, type EngineTurn, readEngineOptions } from './types.js';
import { syncSkillLinks, writeManagedSection } from './workspace-files.js';

const DOCUMENTED_MODELS = ['gpt-5-codex', 'gpt-5', 'gpt-5-mini', 'o4-mini', 'o3'];
const ROUTED_PROVIDER = 'service';
const ROUTED_KEY_VAR = 'SERVICE_PROVIDER_API_KEY';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The `codex:` block of service.yaml (the spec's rules): `mode` unrestricted (default) or safe;
 * explicit `sandbox` / `approval`; `search`; `addDirs` relative to the workspace.
 */
const codexSchema = (f: FieldBuilders) =>
  z.strictObject({
    mode: z.enum(['unrestricted', 'safe']).default('unrestricted'),
    sandbox: z.enum(['read-only', 'workspace-write', 'danger-full-access']).optional(),
    approval: z.enum(['untrusted', 'on-request', 'never']).optional(),
    search: f.bool().default(false),
    addDirs: z.array(z.string()).default([]),
  });
type CodexOptions = z.output<ReturnType<typeof codexSchema>>;
const codexOptions: EngineOptionsBlock<CodexOptions> = { key: 'codex', schema: codexSchema };

const optionsOf = (turn: EngineTurn): CodexOptions => readEngineOptions(turn.config, codexOptions, fieldBuilders(true));

/**
 * engine_d: Codex CLI (`codex`, npm @openai/codex), driven with `exec --json`; with
 * `skipPermissions: false` through `codex app-server`, which asks before tools run.
 */
export const codex: EngineDefinition = {
  id: 'engine_d',
  title: 'Codex CLI',
  aliases: ['codex'],
  binaries: ['codex'],
  npmPackage: '@openai/codex',
  nativeCommands: false,
  honoursPermissions: false,
  approvals: 'conversation',
  options: codexOptions,

  credentialStatus: (ctx) =>
    findCredential(ctx, {
      vars: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
      loginFiles: [ctx.env.CODEX_HOME ? path.join(ctx.env.CODEX_HOME, 'auth.json') : '.codex/auth.json'],
      loginCommand: 'codex login',
    }),

  prepareWorkspace(ws) {
    writeManagedSection(path.join(ws.dir, 'AGENTS.md'), ws.context);
    syncSkillLinks(path.join(ws.dir, '.agents', 'skills'), path.join(ws.dir, 'skills'), ws.skills);
  },

  buildInvocation(turn) {
    const options = optionsOf(turn);
    const search = options.search ? ['--search'] : [];
    const { args: overrides, env } = configOverrides(turn, options);
    // skipPermissions false: `codex exec` cannot ask anyone, `codex app-server` can (codex-app-server.ts).
    if (asksThroughAppServer(turn)) return { args: [...search, 'app-server', ...overrides], env };
    // `exec resume` with a non-UUID id that names no thread silently starts a new thread and exits 0.
    const resumeId = turn.sessionId && UUID.test(turn.sessionId) ? turn.sessionId : undefined;
    const args = [...search, 'exec'];
    if (resumeId) args.push('resume');
    args.push('--json', '--skip-git-repo-check', ...permissionArgs(turn), ...overrides);
    for (const image of turn.images) args.push('--image', image);
    if (resumeId) args.push(resumeId);
    args.push('-'); // the prompt comes from stdin: no argv limit, not visible in ps
    return { args, env, stdin: turn.prompt };
  },

  createParser(turn) {
    if (!asksThroughAppServer(turn)) return createCodexParser();
    const options = optionsOf(turn);
    return createCodexAppServerConversation({
      cwd: turn.dir,
      prompt: turn.prompt,
      images: turn.images,
      ...(turn.sessionId && UUID.test(turn.sessionId) ? { threadId: turn.sessionId } : {}),
      ...appServerPermissions(options),
      ...(turn.approvals ? { ask: turn.approvals.ask } : {}),
      clientVersion: packageVersion(),
    });
  },

  // Resident: `codex app-server`, the thread opened once and a turn/start per turn (turn/interrupt on abort).
  warm: {
    buildInvocation(turn) {
      const options = optionsOf(turn);
      const { args: overrides, env } = configOverrides(turn, options);
      return { args: [...(options.search ? ['--search'] : []), 'app-server', ...overrides], env };
    },
    createProtocol: (start) =>
      createCodexAppServerResident({
        cwd: start.dir,
        ...(start.sessionId && UUID.test(start.sessionId) ? { threadId: start.sessionId } : {}),
        ...(asksThroughAppServer(start) ? appServerPermissions(optionsOf(start)) : unattendedPermissions(optionsOf(start))),
        clientVersion: packageVersion(),
      }),
  },

  async listModels() {
    return { models: DOCUMENTED_MODELS, source: 'documented' };
  },
};

// --- internal ---

const asksThroughAppServer = (turn: EngineTurn) => !turn.config.skipPermissions;

/**
 * Permissions of an app-server turn (skipPermissions false): the person is asked, so the policy
 * is `untrusted` (Codex asks before every command it does not know to be read-only) and the
 * sandbox is off unless `mode: safe` (workspace-write); explicit `codex.approval` / `codex.sandbox` win.
 */
function appServerPermissions(c: CodexOptions): Pick<CodexAppServerTurn, 'approvalPolicy' | 'sandbox'> {
  return {
    approvalPolicy: c.approval ?? 'untrusted',
    sandbox: c.sandbox ?? (c.mode === 'safe' || c.approval ? 'workspace-write' : 'danger-full-access'),
  };
}

/** The permissions `codex exec` runs with (permissionArgs), as an app-server thread's settings. */
function unattendedPermissions(c: CodexOptions): Pick<CodexAppServerTurn, 'approvalPolicy' | 'sandbox'> {
  if (c.sandbox || c.approval) return { approvalPolicy: c.approval ?? 'on-request', sandbox: c.sandbox ?? 'workspace-write' };
  if (c.mode === 'safe') return { approvalPolicy: 'on-request', sandbox: 'workspace-write' };
  return { approvalPolicy: 'never', sandbox: 'danger-full-access' };
}

/**
 * The `-c` overrides and environment both ways of running Codex share (`exec resume` rejects
 * --sandbox, --add-dir and friends, so every setting goes through -c).
 */
function configOverrides(turn: EngineTurn, options: CodexOptions): { args: string[]; env: Record<string, string | undefined> } {
  const args: string[] = [];
  const set = (key: string, value: unknown) => args.push('-c', `${key}=${toToml(value)}`);
  set('analytics.enabled', false);
  set('check_for_update_on_startup', false);
  const dirs = options.addDirs.map((d) => path.resolve(turn.dir, d));
  if (dirs.length > 0) set('sandbox_workspace_write.writable_roots', dirs);
  if (turn.model) set('model', turn.model);
  const env: Record<string, string | undefined> = {};
  const key = turn.endpoint?.apiKey ?? turn.apiKey;
  if (turn.endpoint?.baseUrl) {
    const p = `model_providers.${ROUTED_PROVIDER}`;
    set('model_provider', ROUTED_PROVIDER);
    set(`${p}.name`, 'service provider');
    set(`${p}.base_url`, turn.endpoint.baseUrl);
    set(`${p}.env_key`, ROUTED_KEY_VAR);
    set(`${p}.wire_api`, 'responses');
    // Codex retries a dead endpoint forever; keep its own retries short, our timeout is the backstop.
    set(`${p}.request_max_retries`, 1);
    set(`${p}.stream_max_retries`, 1);
    // With a self-hosted endpoint, skip the plugin marketplace lookups (GitHub, ChatGPT) Codex makes on every run.
    set('features.plugins', false);
    env[ROUTED_KEY_VAR] = key ?? '';
  } else if (key) {
    env.OPENAI_API_KEY = key;
  }
  // MCP credentials never go into argv (world-readable in ps and /proc): values travel in the
  // engine's private environment and the -c overrides only name the variables (env_vars passes a
  // variable through under its own name; env_http_headers maps a header to a variable).
  let header = 0;
  for (const [name, s] of Object.entries(turn.config.mcp ?? {})) {
    const base = `mcp_servers.${tomlKey(name)}`;
    if ('command' in s) {
      set(`${base}.command`, s.command);
      set(`${base}.args`, s.args);
      if (Object.keys(s.env).length > 0) {
        Object.assign(env, s.env);
        set(`${base}.env_vars`, Object.keys(s.env));
      }
    } else {
      set(`${base}.url`, s.url);
      const headers: Record<string, string> = {};
      for (const [h, value] of Object.entries(s.headers)) {
        // "SECRET" in the name: Codex's default shell policy keeps such variables out of tool shells.
        const variable = `SERVICE_MCP_SECRET_${++header}`;
        env[variable] = value;
        headers[h] = variable;
      }
      if (Object.keys(headers).length > 0) set(`${base}.env_http_headers`, headers);
    }
  }
  return { args, env };
}

/** The spec's codex rules: explicit sandbox/approval win over `mode`; one alone defaults the other. */
function permissionArgs(turn: EngineTurn): string[] {
  const c = optionsOf(turn);
  if (c.sandbox || c.approval) {
    return ['-c', `sandbox_mode=${toToml(c.sandbox ?? 'workspace-write')}`, '-c', `approval_policy=${toToml(c.approval ?? 'on-request')}`];
  }
  if (c.mode === 'safe') return ['-c', 'sandbox_mode="workspace-write"', '-c', 'approval_policy="on-request"'];
  return ['--dangerously-bypass-approvals-and-sandbox'];
}

/** A TOML value for `-c key=value` (strings, numbers, booleans, string arrays, string tables). */
function toToml(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(toToml).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${tomlKey(k)} = ${toToml(v)}`);
  return `{ ${entries.join(', ')} }`;
}

function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

/**
 * `codex exec --json` of Codex 0.169 (fixtures in test/fixtures/engine_d). `error` lines are
 * retries or warnings until `turn.failed`; an `item.completed` of type `error` is a warning
 * (model metadata); tool output is `aggregated_output`.
 */
export function createCodexParser(): LineParser {
  const joiner = createTextJoiner();
  const started = new Set<string>();
  let lastMessage = '';
  let lastError: string | undefined;
  let settled = false;

  const toolStart = (item: Record<string, unknown>, id: string): AgentEvent[] => {
    if (started.has(id)) return [];
    started.add(id);
    joiner.breakBlock();
    if (item.type === 'command_execution') return [{ type: 'tool_call', callId: id, name: 'shell', input: { command: str(item.command) ?? '' } }];
    if (item.type === 'mcp_tool_call')
      return [{ type: 'tool_call', callId: id, name: `${str(item.server) ?? 'mcp'}.${str(item.tool) ?? 'tool'}`, input: item.arguments ?? {} }];
    if (item.type === 'file_change') return [{ type: 'tool_call', callId: id, name: 'file_change', input: { changes: item.changes ?? [] } }];
    if (item.type === 'web_search') return [{ type: 'tool_call', callId: id, name: 'web_search', input: { query: str(item.query) ?? '' } }];
    return [];
  };

  const toolEnd = (item: Record<string, unknown>, id: string): AgentEvent[] => {
    const out = toolStart(item, id);
    if (item.type === 'command_execution') {
      const code = num(item.exit_code);
      out.push({ type: 'tool_result', callId: id, output: str(item.aggregated_output) ?? '', isError: code !== undefined && code !== 0 });
    } else if (item.type === 'mcp_tool_call') {
      const error = obj(item.error);
      out.push({
        type: 'tool_result',
        callId: id,
        output: error ? (str(error.message) ?? 'error') : JSON.stringify(item.result ?? null),
        isError: Boolean(error),
      });
    } else if (item.type === 'file_change' || item.type === 'web_search') {
      out.push({ type: 'tool_result', callId: id, output: str(item.status) ?? 'completed' });
    }
    return out;
  };

  return {
    parseLine(line) {
      const d = parseJsonLine(line);
      if (!d) return [];
      const item = obj(d.item);
      const id = str(item?.id) ?? '';
      switch (d.type) {
        case 'thread.started': {
          const threadId = str(d.thread_id);
          return threadId ? [{ type: 'session', sessionId: threadId }] : [];
        }
        case 'item.started':
          return item ? toolStart(item, id) : [];
        case 'item.completed':
          if (!item) return [];
          if (item.type === 'agent_message') {
            lastMessage = str(item.text) ?? '';
            return joiner.text(lastMessage, true);
          }
          if (item.type === 'error') return [{ type: 'warning', message: str(item.message) ?? 'warning' }];
          return toolEnd(item, id);
        case 'error': {
          const message = str(d.message) ?? 'error';
          if (/^Reconnecting\.\.\./.test(message)) return [{ type: 'warning', message }];
          lastError = message;
          return [];
        }
        case 'turn.failed': {
          settled = true;
          const message = str(obj(d.error)?.message) ?? lastError ?? 'Codex turn failed';
          return [{ type: 'failure', message, kind: classify(message) }];
        }
        case 'turn.completed': {
          settled = true;
          const usage = obj(d.usage);
          return [
            { type: 'usage', inputTokens: num(usage?.input_tokens), outputTokens: num(usage?.output_tokens) },
            { type: 'final', text: lastMessage },
          ];
        }
        default:
          return [];
      }
    },
    finish(exit) {
      if (settled || exit.code === 0) return [];
      if (exit.code === 1 && /thread\/resume failed: no rollout found for thread id /.test(exit.stderrTail)) {
        return [{ type: 'failure', kind: 'session_not_found', message: 'Codex has no session with that thread id' }];
      }
      const last =
        lastError ??
        exit.stderrTail
          .split('\n')
          .filter((l) => l.trim() && !/^WARNING: |^Reading additional input/.test(l))
          .pop();
      return [{ type: 'failure', kind: last ? classify(last) : 'engine', message: describeSilentFailure('codex', exit, last) }];
    },
  };
}
