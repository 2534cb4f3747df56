import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { APPROVAL_HELPER_SCRIPT, APPROVAL_MCP_TOOL } from '../../../src/core/approvals/approval-broker.js';
import type { ApprovalAsk, ApprovalVerdict } from '../../../src/core/approvals/approvals.js';
import { createEngineRunner, type EngineTurnRequest } from '../../../src/core/engines/engine-runner.js';
import { createMemoryFailoverStore } from '../../../src/core/engines/failover.js';
import type { AgentEvent } from '../../../src/core/events.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';

/**
 * Engines asking before a tool runs (skipPermissions: false), through the engine runner with real
 * processes: engine_b's stand-in asks like Claude Code (an MCP call to our helper, which reaches
 * the turn over the loopback endpoint); the ACP stand-in sends session/request_permission.
 */
function setup(engine: 'engine_b' | 'acp', yaml = 'skipPermissions: false\n') {
  const standIn = createStandIn();
  const dir = testdir({ 'service.yaml': `name: tester\nengine: ${engine}\n${engine === 'acp' ? 'acp:\n  command: acp-agent\n' : ''}${yaml}` });
  const runner = createEngineRunner({
    dir,
    stateDir: path.join(dir, '.service'),
    skillsDir: path.join(dir, 'skills'),
    log: createSilentLogger(),
    failover: createMemoryFailoverStore(),
    env: { ...process.env, ...standIn.env, ANTHROPIC_API_KEY: 'env-key' },
  });
  const run = async (req: Partial<EngineTurnRequest> & { prompt: string }) => {
    const events: AgentEvent[] = [];
    for await (const e of runner.run({ config: loadServiceConfig(dir, {}).config, ...req })) events.push(e);
    return events;
  };
  return { dir, standIn, run };
}

const answering = (verdicts: ApprovalVerdict[]) => {
  const asked: ApprovalAsk[] = [];
  return {
    asked,
    askApproval: async (req: ApprovalAsk) => {
      asked.push(req);
      return verdicts.shift() ?? { allow: false, message: 'no more answers' };
    },
  };
};

const doneText = (events: AgentEvent[]) => (events.find((e) => e.type === 'done') as { text: string } | undefined)?.text;

describe('engine_b asks through the permission-prompt helper', () => {
  it('allowed: the command runs (its file exists); the helper was named with --permission-prompt-tool', async () => {
    const t = setup('engine_b');
    const a = answering([{ allow: true, message: 'ok' }]);
    const events = await t.run({ prompt: 'ASK:echo made > SIDE-EFFECT.txt', askApproval: a.askApproval });
    expect(doneText(events)).toBe('ALLOWED');
    expect(a.asked.map((r) => [r.tool, r.input])).toEqual([['Bash', { command: 'echo made > SIDE-EFFECT.txt', description: expect.any(String) }]]);
    expect(fs.readFileSync(path.join(t.dir, 'SIDE-EFFECT.txt'), 'utf8')).toBe('made\n');
    const argv = t.standIn.runs()[0]?.argv as string[];
    expect(argv[argv.indexOf('--permission-prompt-tool') + 1]).toBe(APPROVAL_MCP_TOOL);
    const mcp = JSON.parse(fs.readFileSync(argv[argv.indexOf('--mcp-config') + 1] ?? '', 'utf8')) as { mcpServers: Record<string, unknown> };
    expect(mcp.mcpServers.service_approvals).toEqual({ command: process.execPath, args: [APPROVAL_HELPER_SCRIPT], timeout: 360_000 });
    // The endpoint and secret reach the helper through the environment, never argv or the file.
    const env = t.standIn.runs()[0]?.env as Record<string, string>;
    expect(env.SERVICE_APPROVAL_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ask$/);
    expect(env.SERVICE_APPROVAL_TOKEN).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(argv)).not.toContain(env.SERVICE_APPROVAL_TOKEN);
  });

  it('denied: the command does not run, the engine is told why and the turn goes on', async () => {
    const t = setup('engine_b');
    const a = answering([{ allow: false, message: 'The person denied this Bash call.' }]);
    const events = await t.run({ prompt: 'ASK:echo made > SIDE-EFFECT.txt', askApproval: a.askApproval });
    expect(doneText(events)).toBe('DENIED: The person denied this Bash call.');
    expect(fs.existsSync(path.join(t.dir, 'SIDE-EFFECT.txt'))).toBe(false);
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ isError: true, output: 'The person denied this Bash call.' });
  });

  it('without anyone to ask (no askApproval) the helper denies', async () => {
    const t = setup('engine_b');
    const events = await t.run({ prompt: 'ASK:echo made > SIDE-EFFECT.txt' });
    expect(doneText(events)).toMatch(/^DENIED: No approval channel/);
    expect(fs.existsSync(path.join(t.dir, 'SIDE-EFFECT.txt'))).toBe(false);
  });

  it('skipPermissions true (the default): no prompt tool, no helper, no endpoint', async () => {
    const t = setup('engine_b', '');
    const a = answering([]);
    await t.run({ prompt: 'hello', askApproval: a.askApproval });
    const run = t.standIn.runs()[0]!;
    expect(run.argv).not.toContain('--permission-prompt-tool');
    expect(run.argv).not.toContain('--mcp-config');
    expect((run.env as Record<string, string>).SERVICE_APPROVAL_URL).toBeUndefined();
    expect(a.asked).toEqual([]);
  });
});

describe('acp answers session/request_permission with what the person decided', () => {
  it('allowed once: the agent gets its allow-once option; denied: its reject option', async () => {
    const t = setup('acp');
    const a = answering([
      { allow: true, message: 'ok' },
      { allow: false, message: 'no' },
    ]);
    const allowed = await t.run({ prompt: 'ASK please', askApproval: a.askApproval });
    expect(
      allowed
        .filter((e) => e.type === 'text')
        .map((e) => (e as { delta: string }).delta)
        .join(''),
    ).toContain('PERMISSION: proceed_once');
    const denied = await t.run({ prompt: 'ASK again', askApproval: a.askApproval });
    expect(
      denied
        .filter((e) => e.type === 'text')
        .map((e) => (e as { delta: string }).delta)
        .join(''),
    ).toContain('PERMISSION: cancel');
    expect(a.asked[0]).toMatchObject({ title: 'shell: echo hi' });
  });

  it('an agent that stops without a word after a denial (Qwen Code): the turn says why instead of failing empty', async () => {
    const t = setup('acp');
    const a = answering([{ allow: false, message: 'no' }]);
    const events = await t.run({ prompt: 'ASK STOP-ON-DENY please', askApproval: a.askApproval });
    const text = events
      .filter((e) => e.type === 'text')
      .map((e) => (e as { delta: string }).delta)
      .join('');
    expect(text).toBe('(The agent stopped: execute was denied.)');
    expect(events.some((e) => e.type === 'failure')).toBe(false);
    expect(doneText(events)).toBe(text);
  });

  it('without anyone to ask the request is rejected with a warning, as before', async () => {
    const t = setup('acp');
    const events = await t.run({ prompt: 'ASK please' });
    expect(events.some((e) => e.type === 'warning' && /refused permission/.test(e.message))).toBe(true);
  });
});
