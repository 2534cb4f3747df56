import path from 'node:path';
import type { AgentEvent, FailureKind } from '../events.js';
import { findCredential } from './credentials.js';
import { createAcpResidentProtocol } from './acp-client.js';
import { promptWithImagePaths, toAcpMcpServers, toMcpServersJson } from './mcp.js';
import { arr, createTextJoiner, isProviderStatus, num, obj, parseJsonLine, str, toolOutputText } from './parse-helpers.js';
import type { LineParser } from './runner.js';
import type { EngineDefinition, EngineTurn } from './types.js';
import { SECRET_FILE_MODE, syncSkillLinks, writeJsonIfChanged, writeManagedSection } from './workspace-files.js';

const DOCUMENTED_MODELS = ['qwen3-coder-plus', 'qwen3-coder-flash', 'qwen3-max', 'qwen-plus'];
/** Qwen Code's synthetic assistant text for a failed model call: `[API Error: 401 Incorrect API key provided…]`. */
const API_ERROR_TEXT = /^\[API Error: (?:(\d{3})\s)?/;

/** engine_f: Qwen Code (`qwen`, npm @qwen-code/qwen-code), driven headless with `--output-format stream-json`. */
export const qwenCode: EngineDefinition = {
  id: 'engine_f',
  title: 'Qwen Code',
  aliases: ['qwen'],
  binaries: ['qwen'],
  npmPackage: '@qwen-code/qwen-code',
  nativeCommands: false,
  honoursPermissions: false,

  credentialStatus: (ctx) =>
    findCredential(ctx, {
      vars: ['OPENAI_API_KEY', 'DASHSCOPE_API_KEY'],
      loginFiles: ['.qwen/settings.json'],
      loginCommand: 'qwen',
    }),

  prepareWorkspace(ws) {
    // Qwen Code reads AGENTS.md as well as QWEN.md (measured with 0.24.4): the file the other engines share.
    writeManagedSection(path.join(ws.dir, 'AGENTS.md'), ws.context);
    syncSkillLinks(path.join(ws.dir, '.agents', 'skills'), path.join(ws.dir, 'skills'), ws.skills);
    writeQwenDefaults(ws.stateDir);
    if (ws.config.mcp) writeJsonIfChanged(mcpFile(ws.stateDir), { mcpServers: toMcpServersJson(ws.config.mcp) }, { mode: SECRET_FILE_MODE });
  },

  buildInvocation(turn) {
    const args = ['--output-format', 'stream-json', '--include-partial-messages', '--approval-mode', turn.config.skipPermissions ? 'yolo' : 'default'];
    if (turn.sessionId) args.push('--resume', turn.sessionId);
    if (turn.model) args.push('--model', turn.model);
    if (turn.endpoint?.baseUrl) args.push('--auth-type', 'openai');
    if (turn.config.mcp) args.push('--mcp-config', mcpFile(turn.stateDir));
    return { args, env: qwenEnv(turn), stdin: promptWithImagePaths(turn.prompt, turn.images) };
  },

  createParser: createQwenParser,

  // Resident: `qwen --acp`, its session kept open (session/resume continues a headless session and back).
  warm: {
    buildInvocation: (turn) => ({ args: ['--acp'], env: qwenEnv(turn) }),
    createProtocol: (start) =>
      createAcpResidentProtocol({
        cwd: start.dir,
        ...(start.sessionId ? { sessionId: start.sessionId } : {}),
        mcpServers: toAcpMcpServers(start.config),
        allowPermissions: start.config.skipPermissions,
        // With a provider the model is OPENAI_MODEL (qwenEnv); otherwise chosen in the session.
        ...(start.model && !start.endpoint?.baseUrl ? { model: start.model } : {}),
        promptOf: (turn) => promptWithImagePaths(turn.prompt, turn.images),
      }),
  },

  async listModels() {
    return { models: DOCUMENTED_MODELS, source: 'documented' };
  },
};

/** The environment that points Qwen Code at the turn's endpoint (OpenAI-compatible) and our defaults; shared with the acp engine. */
export function qwenEnv(turn: EngineTurn): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { QWEN_CODE_SUPPRESS_YOLO_WARNING: '1', QWEN_CODE_SYSTEM_DEFAULTS_PATH: defaultsFile(turn.stateDir) };
  if (turn.endpoint?.baseUrl) env.OPENAI_BASE_URL = turn.endpoint.baseUrl;
  const key = turn.endpoint?.apiKey ?? turn.apiKey;
  if (key) env.OPENAI_API_KEY = key;
  if (turn.endpoint?.baseUrl && turn.model) env.OPENAI_MODEL = turn.model;
  return env;
}

// --- internal ---

/**
 * Lowest-precedence settings (QWEN_CODE_SYSTEM_DEFAULTS_PATH; the user's own settings win). The
 * managed auto-memory makes one more model call after every turn (~2 s, and its cost) and writes
 * memory files of its own; the assistant keeps its memory in the general skill's notes instead.
 */
const QWEN_DEFAULTS = {
  memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false },
  general: { enableAutoUpdate: false },
  privacy: { usageStatisticsEnabled: false },
};

/** Write the defaults file qwenEnv points at (prepareWorkspace of engines that run qwen). */
export function writeQwenDefaults(stateDir: string): void {
  writeJsonIfChanged(defaultsFile(stateDir), QWEN_DEFAULTS);
}

function defaultsFile(stateDir: string): string {
  return path.join(stateDir, 'engines', 'engine_f-defaults.json');
}

function mcpFile(stateDir: string): string {
  return path.join(stateDir, 'engines', 'engine_f-mcp.json');
}

/**
 * stream-json of Qwen Code 0.24 with --include-partial-messages (fixtures in test/fixtures/engine_f):
 * Claude Code's shapes. A failed model call becomes an assistant text `[API Error: …]`, streamed
 * like an answer; it is held back and reported as the failure. `result.usage` is cumulative for a
 * resumed session, so the per-call usage of the assistant messages is summed instead.
 */
export function createQwenParser(): LineParser {
  const joiner = createTextJoiner();
  const streamed = new Set<string>();
  let message: string | undefined;
  let blockIsError = false;
  let apiError: string | undefined;
  let settled = false;
  let inputTokens = 0;
  let outputTokens = 0;

  const onStreamEvent = (ev: Record<string, unknown>): AgentEvent[] => {
    if (ev.type === 'message_start') message = str(obj(ev.message)?.id);
    if (ev.type === 'content_block_start') {
      blockIsError = false;
      if (obj(ev.content_block)?.type === 'text') joiner.breakBlock();
    }
    const delta = obj(ev.delta);
    if (ev.type !== 'content_block_delta' || delta?.type !== 'text_delta') return [];
    const text = str(delta.text) ?? '';
    if (API_ERROR_TEXT.test(text)) blockIsError = true;
    if (blockIsError) return [];
    if (message) streamed.add(message);
    return joiner.text(text, false);
  };

  const onAssistant = (d: Record<string, unknown>): AgentEvent[] => {
    const m = obj(d.message);
    const usage = obj(m?.usage);
    inputTokens += num(usage?.input_tokens) ?? 0;
    outputTokens += num(usage?.output_tokens) ?? 0;
    const out: AgentEvent[] = [];
    for (const block of arr(m?.content)) {
      const b = obj(block);
      const text = str(b?.text) ?? '';
      if (b?.type === 'text' && API_ERROR_TEXT.test(text)) apiError = text;
      else if (b?.type === 'text' && !streamed.has(str(m?.id) ?? '')) out.push(...joiner.text(text, true));
      else if (b?.type === 'tool_use') {
        joiner.breakBlock();
        out.push({ type: 'tool_call', callId: str(b.id), name: str(b.name) ?? 'tool', input: b.input ?? {} });
      }
    }
    return out;
  };

  const onResult = (d: Record<string, unknown>): AgentEvent[] => {
    settled = true;
    const out: AgentEvent[] = [];
    const sessionId = str(d.session_id);
    if (sessionId) out.push({ type: 'session', sessionId });
    out.push({ type: 'usage', inputTokens, outputTokens, numTurns: num(d.num_turns) });
    if (d.is_error !== true) return [...out, { type: 'final', text: str(d.result) ?? '' }];
    const message = str(obj(d.error)?.message) ?? apiError ?? str(d.result) ?? `Qwen Code reported an error (${str(d.subtype) ?? 'unknown'})`;
    const status = Number(API_ERROR_TEXT.exec(message)?.[1]) || undefined;
    const kind: FailureKind = isProviderStatus(status) || /Connection error|ECONNREFUSED|fetch failed/i.test(message) ? 'provider' : 'engine';
    out.push({ type: 'failure', kind, message: message.replace(/^\[API Error: ([\s\S]*)\]$/, 'API error $1'), ...(status ? { status } : {}) });
    return out;
  };

  return {
    parseLine(line) {
      const d = parseJsonLine(line);
      if (!d) return [];
      if (d.type === 'system' && d.subtype === 'init') {
        const sessionId = str(d.session_id);
        return sessionId ? [{ type: 'session', sessionId }] : [];
      }
      if (d.type === 'stream_event') return onStreamEvent(obj(d.event) ?? {});
      if (d.type === 'assistant') return onAssistant(d);
      if (d.type === 'result') return onResult(d);
      if (d.type !== 'user') return [];
      return arr(obj(d.message)?.content).flatMap((block): AgentEvent[] => {
        const b = obj(block);
        return b?.type === 'tool_result'
          ? [{ type: 'tool_result', callId: str(b.tool_use_id), output: toolOutputText(b.content), isError: b.is_error === true }]
          : [];
      });
    },
    finish(exit) {
      if (settled || exit.code === 0) return [];
      // 0.24.4: an unknown --resume id prints only `No saved session found with ID <id>. …` on stderr, exit 1
      // (a value that is not an id: `… with title "<value>".`).
      const notFound = /^No saved session found with (ID|title) /m.test(exit.stderrTail);
      const last = exit.stderrTail
        .split('\n')
        .filter((l) => l.trim() && !/^(Warning: running headless|Ripgrep not available|\[perf\])/.test(l))
        .pop()
        ?.trim();
      return [{ type: 'failure', kind: notFound ? 'session_not_found' : 'engine', message: last ?? `qwen exited with code ${exit.code}` }];
    },
  };
}
