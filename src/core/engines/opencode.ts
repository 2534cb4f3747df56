import path from 'node:path';
import type { AgentEvent } from '../events.js';
import { createAcpConversation, createAcpResidentProtocol } from './acp-client.js';
import { findCredential } from './credentials.js';
import { promptWithImagePaths } from './mcp.js';
import { createTextJoiner, isProviderStatus, num, obj, parseJsonLine, str, toolOutputText, describeSilentFailure } from './parse-helpers.js';
import { runCapture, type LineParser } from './runner.js';
import type { EngineDefinition, EngineTurn } from './types.js';
import { syncSkillLinks, writeManagedSection } from './workspace-files.js';

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

/** Provider id our generated OpenCode config gives `provider.baseUrl` (an OpenAI-compatible endpoint). */
const ROUTED_PROVIDER = 'service';
const ROUTED_KEY_VAR = 'SERVICE_PROVIDER_API_KEY';

/**
 * What OpenCode asks about on an ACP turn (skipPermissions false): shell commands, file changes
 * (`edit` covers edit, write and patch) and web fetches. Its defaults allow all three.
 */
const ASKED_PERMISSIONS = { bash: 'ask', edit: 'ask', webfetch: 'ask' } as const;

/**
 * engine_c: OpenCode (`opencode`, npm opencode-ai), driven with `run --format json`; with
 * `skipPermissions: false` through `opencode acp`, which asks before tools run (acp-client.ts).
 */
export const opencode: EngineDefinition = {
  id: 'engine_c',
  title: 'OpenCode',
  aliases: ['opencode'],
  binaries: ['opencode'],
  npmPackage: 'opencode-ai',
  nativeCommands: true,
  honoursPermissions: false,
  approvals: 'conversation',

  credentialStatus: (ctx) => {
    const prefix = (ctx.config.model ?? '').split('/')[0] ?? '';
    const providerVar = PROVIDER_VARS[prefix];
    return findCredential(ctx, {
      vars: providerVar ? [providerVar] : Object.values(PROVIDER_VARS),
      loginFiles: ['.local/share/opencode/auth.json'],
      loginCommand: 'opencode auth login',
    });
  },

  checkConfig: (config) =>
    config.engine === 'engine_c' && config.model !== undefined && !/^[^/\s]+\/\S+$/.test(config.model)
      ? [{ path: ['model'], message: `engine_c needs a model in the form provider/model (for example anthropic/claude-sonnet-4-5), got "${config.model}"` }]
      : [],

  prepareWorkspace(ws) {
    writeManagedSection(path.join(ws.dir, 'AGENTS.md'), ws.context);
    // `.agents/skills` rather than `.opencode/`: OpenCode reads both, but a `.opencode/` folder makes it
    // run `npm install @opencode-ai/plugin` there before every turn (network, files in the workspace).
    syncSkillLinks(path.join(ws.dir, '.agents', 'skills'), path.join(ws.dir, 'skills'), ws.skills);
  },

  buildInvocation(turn) {
    // skipPermissions false: `opencode run` cannot ask anyone (it waits forever), `opencode acp` can.
    if (asksThroughAcp(turn)) return { args: ['acp'], env: openCodeEnv(turn) };
    const args = ['run', '--format', 'json'];
    if (turn.sessionId) args.push('--session', turn.sessionId);
    const model = routedModel(turn);
    if (model) args.push('--model', model);
    const env = openCodeEnv(turn);
    if (turn.command) {
      args.push('--command', turn.command.name);
      if (turn.command.arguments) args.push(turn.command.arguments);
      return { args, env };
    }
    // Through stdin the prompt reaches the model verbatim; as argv OpenCode wraps it in quotes.
    return { args, env, stdin: promptWithImagePaths(turn.prompt, turn.images) };
  },

  createParser(turn) {
    if (!asksThroughAcp(turn)) return createOpenCodeParser();
    return createAcpConversation({
      cwd: turn.dir,
      prompt: acpPrompt(turn),
      ...(turn.sessionId ? { sessionId: turn.sessionId } : {}),
      // MCP servers, model and provider are in OPENCODE_CONFIG_CONTENT, as for `opencode run`.
      mcpServers: [],
      allowPermissions: false,
      ...(turn.approvals ? { askPermission: turn.approvals.ask } : {}),
    });
  },

  // Resident: `opencode acp`, its session kept open and prompted once per turn (session/cancel interrupts);
  // the same ACP client as with skipPermissions false, here with either permission set (docs/engines.md).
  warm: {
    buildInvocation: (turn) => ({ args: ['acp'], env: openCodeEnv(turn, true) }),
    createProtocol: (start) =>
      createAcpResidentProtocol({
        cwd: start.dir,
        ...(start.sessionId ? { sessionId: start.sessionId } : {}),
        // MCP servers, model and provider are in OPENCODE_CONFIG_CONTENT, as for `opencode run`.
        mcpServers: [],
        allowPermissions: start.config.skipPermissions,
        promptOf: acpPrompt,
      }),
  },

  async listModels(ctx) {
    const r = await runCapture({ binary: ctx.binary, args: ['models'], cwd: ctx.dir, env: ctx.env, timeoutMs: 30_000 });
    const models = r.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /^[^/\s]+\/\S+$/.test(l));
    if (!r.ok && models.length === 0) throw new Error(`opencode models failed: ${r.message || 'no output'}`);
    return { models, source: 'cli' };
  },
};

// --- internal ---

const asksThroughAcp = (turn: EngineTurn) => !turn.config.skipPermissions;

/** The environment both ways of running OpenCode share: our config, no update checks, the routed key. */
function openCodeEnv(turn: EngineTurn, viaAcp = asksThroughAcp(turn)): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {
    OPENCODE_CONFIG_CONTENT: JSON.stringify(openCodeConfig(turn, viaAcp)),
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  };
  const key = turn.endpoint?.apiKey ?? turn.apiKey;
  if (turn.endpoint?.baseUrl && key) env[ROUTED_KEY_VAR] = key;
  return env;
}

/** A native command goes to `opencode acp` as its slash command in the prompt text. */
function acpPrompt(turn: EngineTurn): string {
  if (turn.command) return [`/${turn.command.name}`, turn.command.arguments].filter(Boolean).join(' ');
  return promptWithImagePaths(turn.prompt, turn.images);
}

/** With provider.baseUrl every model is served by our generated provider block, under its bare name. */
function routedModel(turn: EngineTurn): string | undefined {
  if (!turn.endpoint?.baseUrl) return turn.model;
  return `${ROUTED_PROVIDER}/${bareModel(turn.model)}`;
}

function bareModel(model: string | undefined): string {
  if (!model) return 'default';
  return model.includes('/') ? model.split('/').slice(1).join('/') : model;
}

/** OpenCode config passed through OPENCODE_CONFIG_CONTENT: nothing is written into the user's files. */
function openCodeConfig(turn: EngineTurn, viaAcp: boolean): Record<string, unknown> {
  const config: Record<string, unknown> = { autoupdate: false, share: 'disabled' };
  if (turn.config.skipPermissions) config.permission = { '*': 'allow' };
  else config.permission = { ...ASKED_PERMISSIONS };
  if (turn.endpoint?.baseUrl) {
    const model = bareModel(turn.model);
    config.provider = {
      [ROUTED_PROVIDER]: {
        npm: '@ai-sdk/openai-compatible',
        name: 'service provider',
        options: { baseURL: turn.endpoint.baseUrl, apiKey: `{env:${ROUTED_KEY_VAR}}` },
        models: { [model]: { name: model, tool_call: true, limit: { context: 128_000, output: 16_384 } } },
      },
    };
    config.model = `${ROUTED_PROVIDER}/${model}`;
    config.small_model = `${ROUTED_PROVIDER}/${model}`;
  } else if (viaAcp && turn.model) {
    // `opencode acp` has no --model: the session starts on the config's model.
    config.model = turn.model;
  }
  if (turn.config.mcp) {
    config.mcp = Object.fromEntries(
      Object.entries(turn.config.mcp).map(([name, s]) => [
        name,
        'command' in s
          ? { type: 'local', command: [s.command, ...s.args], environment: s.env, enabled: true }
          : { type: 'remote', url: s.url, headers: s.headers, enabled: true },
      ]),
    );
  }
  return config;
}

/**
 * `opencode run --format json` of OpenCode 1.18 (fixtures in test/fixtures/engine_c). There is no
 * summary event: the final text is the text of the last step, and a failure is an `error` line
 * or, for CLI-level errors such as an unknown session, only ANSI text on stderr.
 */
export function createOpenCodeParser(): LineParser {
  const joiner = createTextJoiner();
  let sessionSent = false;
  let stepTexts: string[] = [];
  let lastStepTexts: string[] = [];
  let sawError = false;

  return {
    parseLine(line) {
      const d = parseJsonLine(line);
      if (!d) return [];
      const out: AgentEvent[] = [];
      const sessionId = str(d.sessionID);
      if (sessionId && !sessionSent) {
        sessionSent = true;
        out.push({ type: 'session', sessionId });
      }
      const part = obj(d.part);
      if (d.type === 'step_start') {
        stepTexts = [];
      } else if (d.type === 'text') {
        const text = str(part?.text) ?? '';
        stepTexts.push(text);
        out.push(...joiner.text(text, true));
      } else if (d.type === 'tool_use') {
        joiner.breakBlock();
        const state = obj(part?.state);
        const failed = state?.status === 'error';
        out.push({ type: 'tool_call', callId: str(part?.callID), name: str(part?.tool) ?? 'tool', input: state?.input ?? {} });
        out.push({ type: 'tool_result', callId: str(part?.callID), output: toolOutputText(failed ? state?.error : state?.output), isError: failed });
      } else if (d.type === 'step_finish') {
        if (stepTexts.length > 0) lastStepTexts = stepTexts;
        const tokens = obj(part?.tokens);
        out.push({ type: 'usage', inputTokens: num(tokens?.input), outputTokens: num(tokens?.output) });
      } else if (d.type === 'error') {
        sawError = true;
        const err = obj(d.error);
        const data = obj(err?.data);
        const status = num(data?.statusCode);
        const message = str(data?.message) ?? str(err?.name) ?? 'OpenCode reported an error';
        const provider = isProviderStatus(status) || /^Cannot connect to API/.test(message);
        out.push({ type: 'failure', message, kind: provider ? 'provider' : 'engine', ...(status ? { status } : {}) });
      }
      return out;
    },
    finish(exit) {
      if (stepTexts.length > 0) lastStepTexts = stepTexts;
      if (exit.code === 0) return [{ type: 'final', text: lastStepTexts.join('\n\n') }];
      if (sawError) return [];
      const last = exit.stderrTail
        .split('\n')
        .filter((l) => l.trim())
        .pop()
        ?.trim();
      const notFound = exit.code === 1 && /^Error: Session not found$/m.test(exit.stderrTail);
      return [{ type: 'failure', kind: notFound ? 'session_not_found' : 'engine', message: describeSilentFailure('opencode', exit, last) }];
    },
  };
}
