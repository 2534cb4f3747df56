import path from 'node:path';
import { APPROVAL_HELPER_SCRIPT, APPROVAL_MCP_SERVER, APPROVAL_MCP_TOOL, APPROVAL_TOKEN_VAR, APPROVAL_URL_VAR } from '../approvals/approval-broker.js';
import type { ServiceConfig } from '../config/schema.js';
import type { AgentEvent } from '../events.js';
import { findCredential } from './credentials.js';
import { promptWithImagePaths, toMcpServersJson } from './mcp.js';
import { arr, createTextJoiner, isProviderStatus, num, obj, parseJsonLine, str, toolOutputText, describeSilentFailure } from './parse-helpers.js';
import type { LineParser } from './runner.js';
import type { EngineDefinition, EngineInvocation, EngineTurn } from './types.js';
import { createStreamJsonProtocol } from './warm/stream-json-protocol.js';
import { SECRET_FILE_MODE, syncSkillLinks, writeJsonIfChanged, writeManagedSection } from './workspace-files.js';

/** Models `/model list` offers for Claude Code, which has no listing command (aliases the CLI accepts). */
const DOCUMENTED_MODELS = ['sonnet', 'opus', 'haiku', 'opusplan', 'sonnet[1m]'];

/** engine_b: Claude Code (`claude`, npm @anthropic-ai/claude-code), driven with `-p --output-format stream-json`. */
export const claudeCode: EngineDefinition = {
  id: 'engine_b',
  title: 'Claude Code',
  aliases: ['claude'],
  binaries: ['claude'],
  npmPackage: '@anthropic-ai/claude-code',
  nativeCommands: false,
  honoursPermissions: false,
  approvals: 'helper',

  credentialStatus: (ctx) =>
    ctx.config.oauthToken
      ? { ok: true, detail: 'oauthToken in service.yaml (subscription token)' }
      : findCredential(ctx, {
          vars: ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_AUTH_TOKEN'],
          loginFiles: ['.claude/.credentials.json'],
          loginCommand: 'claude login',
        }),

  prepareWorkspace(ws) {
    writeManagedSection(path.join(ws.dir, 'CLAUDE.md'), ws.context);
    syncSkillLinks(path.join(ws.dir, '.claude', 'skills'), path.join(ws.dir, 'skills'), ws.skills);
    if (usesMcpFile(ws.config)) writeJsonIfChanged(mcpFile(ws.stateDir), { mcpServers: mcpServers(ws.config) }, { mode: SECRET_FILE_MODE });
  },

  buildInvocation: buildClaudeInvocation,

  createParser: createClaudeParser,

  // Resident: the same command line reading user messages as stream-json on stdin (warm/stream-json-protocol.ts).
  warm: {
    buildInvocation(turn) {
      const { args, env } = buildClaudeInvocation(turn);
      return { args: [...args, '--input-format', 'stream-json'], env };
    },
    createProtocol: () => createStreamJsonProtocol({ createParser: createClaudeParser, promptOf: (turn) => promptWithImagePaths(turn.prompt, turn.images) }),
  },

  async listModels() {
    return { models: DOCUMENTED_MODELS, source: 'documented' };
  },
};

function buildClaudeInvocation(turn: EngineTurn): EngineInvocation {
  const args = ['-p', '--output-format', 'stream-json', '--verbose', '--include-partial-messages'];
  if (turn.config.skipPermissions) args.push('--dangerously-skip-permissions');
  if (turn.sessionId) args.push('--resume', turn.sessionId);
  if (turn.model) args.push('--model', turn.model);
  if (usesMcpFile(turn.config)) args.push('--mcp-config', mcpFile(turn.stateDir));
  // Chat approvals: Claude Code asks our helper (an MCP tool) instead of failing the tool call.
  if (!turn.config.skipPermissions) args.push('--permission-prompt-tool', APPROVAL_MCP_TOOL);
  // A non-admin's turn: deny rules for the file tools on the assistant's own files (they hold in every permission mode).
  if (turn.protectedPaths?.length) args.push('--disallowedTools', ...turn.protectedPaths.flatMap(denyRules));

  const env: Record<string, string | undefined> = {
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    // The default is 10 retries with backoff (minutes against a dead provider); our timeout is the backstop.
    CLAUDE_CODE_MAX_RETRIES: '2',
  };
  // Claude Code refuses --dangerously-skip-permissions as root unless it is told it runs sandboxed.
  if (turn.config.skipPermissions && turn.isRoot) env.IS_SANDBOX = '1';
  // The helper inherits Claude Code's environment: where to ask, and this turn's secret (it can only ask, never answer).
  if (turn.approvals?.helper) {
    env[APPROVAL_URL_VAR] = turn.approvals.helper.url;
    env[APPROVAL_TOKEN_VAR] = turn.approvals.helper.token;
  }
  if (turn.endpoint?.baseUrl) env.ANTHROPIC_BASE_URL = turn.endpoint.baseUrl;
  const key = turn.endpoint?.apiKey ?? turn.apiKey;
  if (key) env.ANTHROPIC_API_KEY = key;
  else if (turn.config.oauthToken) {
    // The subscription token must win: an API key in the environment would be used instead.
    env.CLAUDE_CODE_OAUTH_TOKEN = turn.config.oauthToken;
    env.ANTHROPIC_API_KEY = undefined;
    env.ANTHROPIC_AUTH_TOKEN = undefined;
  }
  return { args, env, stdin: promptWithImagePaths(turn.prompt, turn.images) };
}

/** Claude Code's rules (gitignore patterns, `./` from the working directory) keeping Read and every editing tool off a path. */
function denyRules(relative: string): string[] {
  const pattern = relative.endsWith('/') ? `./${relative}**` : `./${relative}`;
  return [`Read(${pattern})`, `Edit(${pattern})`];
}

function mcpFile(stateDir: string): string {
  return path.join(stateDir, 'engines', 'engine_b-mcp.json');
}

const usesMcpFile = (config: ServiceConfig) => Boolean(config.mcp) || !config.skipPermissions;

/**
 * The user's MCP servers, plus our permission-prompt helper when Claude Code must ask. Its call
 * timeout outlasts approvalTimeoutSeconds, so a person's silence is ours to deny, with a reason.
 */
function mcpServers(config: ServiceConfig): Record<string, unknown> {
  const servers = toMcpServersJson(config.mcp);
  if (!config.skipPermissions) {
    servers[APPROVAL_MCP_SERVER] = {
      command: process.execPath,
      args: [APPROVAL_HELPER_SCRIPT],
      timeout: Math.ceil((config.approvalTimeoutSeconds + 60) * 1000),
    };
  }
  return servers;
}

/**
 * stream-json of Claude Code 2.1.x (fixtures in test/fixtures/engine_b). With
 * --include-partial-messages text arrives as `stream_event` deltas and again as the whole
 * `assistant` message: the whole message is skipped for blocks already streamed.
 */
export function createClaudeParser(): LineParser {
  const joiner = createTextJoiner();
  const streamedMessages = new Set<string>();
  let currentStreamMessage: string | undefined;
  let providerError: string | undefined;
  let sawResult = false;

  const parseLine = (line: string): AgentEvent[] => {
    const d = parseJsonLine(line);
    if (!d) return [];
    const out: AgentEvent[] = [];
    const sessionId = str(d.session_id);
    if (d.type === 'system' && d.subtype === 'init' && sessionId) out.push({ type: 'session', sessionId });
    else if (d.type === 'system' && d.subtype === 'api_retry') {
      out.push({
        type: 'warning',
        message: `model API retry ${num(d.attempt) ?? '?'}/${num(d.max_retries) ?? '?'} (${str(d.error) ?? 'error'}${num(d.error_status) ? ` ${d.error_status}` : ''})`,
      });
    } else if (d.type === 'stream_event') {
      const ev = obj(d.event);
      if (ev?.type === 'message_start') currentStreamMessage = str(obj(ev.message)?.id);
      const delta = obj(ev?.delta);
      if (ev?.type === 'content_block_start' && obj(ev.content_block)?.type === 'text') joiner.breakBlock();
      if (ev?.type === 'content_block_delta' && delta?.type === 'text_delta') {
        if (currentStreamMessage) streamedMessages.add(currentStreamMessage);
        out.push(...joiner.text(str(delta.text) ?? '', false));
      }
    } else if (d.type === 'assistant') {
      out.push(...parseAssistant(d));
    } else if (d.type === 'user') {
      for (const block of arr(obj(d.message)?.content)) {
        const b = obj(block);
        if (b?.type === 'tool_result') {
          out.push({ type: 'tool_result', callId: str(b.tool_use_id), output: toolOutputText(b.content), isError: b.is_error === true });
        }
      }
    } else if (d.type === 'result') {
      sawResult = true;
      out.push(...parseResult(d));
    }
    return out;
  };

  const parseAssistant = (d: Record<string, unknown>): AgentEvent[] => {
    const message = obj(d.message);
    // API failures come as a synthetic assistant text; it is not model output.
    if (message?.model === '<synthetic>') {
      providerError = str(d.error) ?? 'api_error';
      return [];
    }
    const out: AgentEvent[] = [];
    const streamed = streamedMessages.has(str(message?.id) ?? '');
    for (const block of arr(message?.content)) {
      const b = obj(block);
      if (b?.type === 'text' && !streamed) out.push(...joiner.text(str(b.text) ?? '', true));
      else if (b?.type === 'tool_use') {
        joiner.breakBlock();
        out.push({ type: 'tool_call', callId: str(b.id), name: str(b.name) ?? 'tool', input: b.input ?? {} });
      }
    }
    return out;
  };

  const parseResult = (d: Record<string, unknown>): AgentEvent[] => {
    const out: AgentEvent[] = [];
    const sessionId = str(d.session_id);
    if (sessionId) out.push({ type: 'session', sessionId });
    const usage = obj(d.usage);
    out.push({
      type: 'usage',
      inputTokens: num(usage?.input_tokens),
      outputTokens: num(usage?.output_tokens),
      costUsd: turnCost(d),
      numTurns: num(d.num_turns),
    });
    // `subtype` stays "success" on API errors; `is_error` is what tells.
    if (d.is_error === true) {
      const errors = arr(d.errors).map(String);
      const message = str(d.result) ?? (errors.join('; ') || `Claude Code reported an error (${str(d.subtype) ?? 'unknown'})`);
      const status = num(d.api_error_status);
      const kind = errors.some((e) => /^No conversation found with session ID: /.test(e))
        ? 'session_not_found'
        : isProviderStatus(status) || providerError !== undefined
          ? 'provider'
          : 'engine';
      out.push({ type: 'failure', message, kind, ...(status ? { status } : {}) });
    } else {
      out.push({ type: 'final', text: str(d.result) ?? '' });
    }
    return out;
  };

  return {
    parseLine,
    finish(exit) {
      if (sawResult || exit.code === 0) return [];
      // Failures before any stream-json (bad flags, root without IS_SANDBOX) are plain stderr.
      const notFound = /^No conversation found with session ID: \S+/m.test(exit.stderrTail);
      const last = exit.stderrTail
        .split('\n')
        .filter((l) => l.trim())
        .pop();
      return [{ type: 'failure', kind: notFound ? 'session_not_found' : 'engine', message: describeSilentFailure('claude', exit, last) }];
    },
  };
}

/**
 * Cost of this invocation. `total_cost_usd` is cumulative for a resumed session (2.1.330: 0.0016,
 * then 0.0024 after a resume), so the per-turn `model_usage_since_last_result` wins when present.
 */
function turnCost(result: Record<string, unknown>): number | undefined {
  const perModel = obj(result.model_usage_since_last_result);
  if (perModel) {
    const costs = Object.values(perModel).map((m) => num(obj(m)?.costUSD));
    if (costs.some((c) => c !== undefined)) return costs.reduce<number>((sum, c) => sum + (c ?? 0), 0);
  }
  return num(result.total_cost_usd);
}
