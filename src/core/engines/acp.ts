import path from 'node:path';
import { z } from 'zod';
import { type FieldBuilders, fieldBuilders, type ServiceConfig } from '../config/schema.js';
import { type AcpTurn, createAcpConversation, createAcpResidentProtocol } from './acp-client.js';
import { geminiEnv } from './gemini-cli.js';
import { promptWithImagePaths, toAcpMcpServers } from './mcp.js';
import { qwenEnv, writeQwenDefaults } from './qwen-code.js';
import { type EngineDefinition, type EngineInvocation, type EngineOptionsBlock, type EngineTurn, readEngineOptions, type WorkspaceContext } from './types.js';
import { syncSkillLinks, writeManagedSection } from './workspace-files.js';

const noNul = (s: string) => !s.includes('\0');
const text = () => z.string().min(1).refine(noNul, 'must not contain a NUL character');

/**
 * The `acp:` block: the program that speaks the Agent Client Protocol on stdio, its arguments and
 * extra environment, the context file it reads, and an `authenticate` method to call if it needs one.
 */
const acpSchema = (_f: FieldBuilders) =>
  z.strictObject({
    command: text().optional(),
    args: z.array(z.string().refine(noNul, 'must not contain a NUL character')).default([]),
    env: z.record(z.string(), z.string().refine(noNul, 'must not contain a NUL character')).default({}),
    contextFile: text().default('AGENTS.md'),
    authMethod: text().optional(),
  });
type AcpOptions = z.output<ReturnType<typeof acpSchema>>;
const acpOptions: EngineOptionsBlock<AcpOptions> = { key: 'acp', schema: acpSchema };
const optionsOf = (config: ServiceConfig): AcpOptions => readEngineOptions(config, acpOptions, fieldBuilders(true));

/**
 * ACP agents this engine knows how to route a `provider` to (their own headless engines' variables),
 * in the order `service init` offers them. Any other program works too; its provider settings then
 * go in `acp.env`.
 */
const KNOWN_AGENTS: ReadonlyArray<{
  binary: string;
  args: string[];
  env?: (turn: EngineTurn) => Record<string, string | undefined>;
  /** How the agent takes a model that its ACP model list may not offer (any name on a routed provider). */
  modelArgs?: (model: string) => string[];
  prepare?: (ws: WorkspaceContext) => void;
}> = [
  // gemini --acp offers only Google's model names in session/new; --model takes any.
  { binary: 'gemini', args: ['--acp'], env: geminiEnv, modelArgs: (model) => ['--model', model] },
  // qwen --acp takes the model from OPENAI_MODEL (qwenEnv) and offers it in session/new.
  { binary: 'qwen', args: ['--acp'], env: qwenEnv, prepare: (ws) => writeQwenDefaults(ws.stateDir) },
  { binary: 'claude-code-acp', args: [] },
  { binary: 'codex-acp', args: [] },
];

const knownAgent = (command: string | undefined) => KNOWN_AGENTS.find((a) => a.binary === path.basename(command ?? ''));

/** acp: any agent that speaks the Agent Client Protocol over stdio, run as an ACP client would. */
export const acpAgent: EngineDefinition = {
  id: 'acp',
  title: 'ACP agent',
  aliases: [],
  binaries: KNOWN_AGENTS.map((a) => a.binary),
  nativeCommands: false,
  honoursPermissions: false,
  approvals: 'conversation',
  options: acpOptions,

  configuredBinary: (config) => optionsOf(config).command,

  initOptions: (found) => {
    // None installed: the first known agent, which init reports as missing.
    const agent = KNOWN_AGENTS.find((a) => found(a.binary)) ?? KNOWN_AGENTS[0];
    return agent && { block: { command: agent.binary, args: agent.args }, program: agent.binary };
  },

  credentialStatus: (ctx) => {
    if (ctx.config.provider?.baseUrl || ctx.config.provider?.apiKey)
      return { ok: true, detail: 'provider in service.yaml (routed through acp.env or the known agent variables)' };
    const command = optionsOf(ctx.config).command ?? '(acp.command not set)';
    return { ok: true, detail: `the ACP agent ${command} authenticates itself (its own login, environment or acp.env)` };
  },

  checkConfig: (config) =>
    config.engine === 'acp' && !optionsOf(config).command
      ? [
          {
            path: ['acp', 'command'],
            message: 'engine acp needs acp.command: the program that speaks ACP on stdio (for example command: gemini, args: [--acp])',
          },
        ]
      : [],

  prepareWorkspace(ws) {
    const options = optionsOf(ws.config);
    writeManagedSection(path.resolve(ws.dir, options.contextFile), ws.context);
    syncSkillLinks(path.join(ws.dir, '.agents', 'skills'), path.join(ws.dir, 'skills'), ws.skills);
    knownAgent(options.command)?.prepare?.(ws);
  },

  buildInvocation: (turn) => acpInvocation(turn),

  createParser(turn) {
    return createAcpConversation({
      ...sessionOf(turn),
      prompt: promptWithImagePaths(turn.prompt, turn.images),
      ...(turn.approvals ? { askPermission: turn.approvals.ask } : {}),
    });
  },

  // Resident: the agent keeps its session open and is prompted once per turn (session/cancel interrupts).
  warm: {
    buildInvocation: (turn) => acpInvocation(turn),
    createProtocol: (start) => createAcpResidentProtocol({ ...sessionOf(start), promptOf: (t) => promptWithImagePaths(t.prompt, t.images) }),
  },

  async listModels() {
    // The agent lists its models in its session/new answer; there is no session outside a turn.
    return { models: [], source: 'documented' };
  },
};

// --- internal ---

function acpInvocation(turn: EngineTurn): EngineInvocation {
  const options = optionsOf(turn.config);
  const agent = knownAgent(options.command);
  const modelArgs = turn.model && agent?.modelArgs ? agent.modelArgs(turn.model) : [];
  // acp.env last: what the user wrote wins over the variables derived from `provider`.
  return { args: [...options.args, ...modelArgs], env: { ...agent?.env?.(turn), ...options.env } };
}

/** The session a turn opens or continues, the same per turn and resident. */
function sessionOf(turn: EngineTurn): Omit<AcpTurn, 'prompt'> {
  const options = optionsOf(turn.config);
  // A model the agent took on its command line is not selected again through ACP.
  const model = knownAgent(options.command)?.modelArgs ? undefined : turn.model;
  return {
    cwd: turn.dir,
    ...(turn.sessionId ? { sessionId: turn.sessionId } : {}),
    mcpServers: toAcpMcpServers(turn.config),
    allowPermissions: turn.config.skipPermissions,
    ...(model ? { model } : {}),
    ...(options.authMethod ? { authMethod: options.authMethod } : {}),
  };
}
