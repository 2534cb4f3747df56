/**
 * Tool approvals from chat, end to end with the real Claude Code CLI (devDependency) against the
 * scripted LLM on 127.0.0.1, through the real gateway and a fake Telegram (the real grammy SDK in
 * our adapter): the model asks for a Bash call that writes a file; Claude Code asks our
 * permission-prompt MCP helper (--permission-prompt-tool); the request reaches the chat; `/deny`
 * makes the agent go on without running it (the file does not exist), `/allow` runs it.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FAKE_ASKING_COMMAND } from '../fakes/fake-llm.js';
import { type ApprovalChat, startApprovalChat } from '../helpers/approval-chat.js';

const HANG_MS = 10 * 60_000;
vi.setConfig({ testTimeout: 15 * 60_000, hookTimeout: 15 * 60_000 });

describe('engine_b (real Claude Code): a Bash call approved or denied from a Telegram chat', () => {
  let chat: ApprovalChat;
  beforeAll(async () => {
    chat = await startApprovalChat({ engine: 'engine_b', prefix: 'service-e2e-approvals-', hangMs: HANG_MS });
  });
  afterAll(() => chat?.close());

  it('/deny: the agent continues without running the command; the file does not exist', async () => {
    const prompt = await chat.askTool('turn one', '/deny', 1);
    expect(prompt).toContain('Bash');
    expect(prompt).toContain(FAKE_ASKING_COMMAND);
    expect(fs.existsSync(chat.written)).toBe(false);
    // Claude Code told the model why: our message came back as the tool's error result.
    const toolResults = JSON.stringify(chat.llm.requests.at(-1)?.body);
    expect(toolResults).toContain('The person denied this Bash call.');
  });

  it('/allow: the command runs and the agent answers after it', async () => {
    await chat.askTool('turn two', '/allow', 2);
    expect(fs.readFileSync(chat.written, 'utf8')).toBe('FAKE-TOOL-OUTPUT\n');
    expect(JSON.stringify(chat.llm.requests.at(-1)?.body)).toContain('FAKE-TOOL-OUTPUT');
  });
});
