/**
 * Tool approvals from chat, end to end with the real Codex CLI (devDependency, 0.169) against the
 * scripted LLM on 127.0.0.1, through the real gateway and a fake Telegram (the real grammy SDK in
 * our adapter): with skipPermissions false engine_d runs `codex app-server`; the model asks for a
 * shell command that writes a file; Codex sends item/commandExecution/requestApproval; the request
 * reaches the chat; `/deny` makes the agent go on without running it (the file does not exist),
 * `/allow` (on the resumed thread) runs it.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FAKE_ASKING_COMMAND } from '../fakes/fake-llm.js';
import { type ApprovalChat, startApprovalChat } from '../helpers/approval-chat.js';
import { replies } from '../helpers/channel-gateway.js';

const HANG_MS = 10 * 60_000;
vi.setConfig({ testTimeout: 15 * 60_000, hookTimeout: 15 * 60_000 });

describe('engine_d (real Codex, app-server): a shell command approved or denied from a Telegram chat', () => {
  let chat: ApprovalChat;
  beforeAll(async () => {
    chat = await startApprovalChat({ engine: 'engine_d', prefix: 'service-e2e-approvals-codex-', hangMs: HANG_MS, baseUrlPath: '/v1' });
  });
  afterAll(() => chat?.close());

  it('/deny: the agent continues without running the command; the file does not exist', async () => {
    const prompt = await chat.askTool('turn one', '/deny', 1);
    expect(prompt).toContain('wants to use shell');
    expect(prompt).toContain(FAKE_ASKING_COMMAND);
    expect(fs.existsSync(chat.written)).toBe(false);
    // Codex told the model the command was rejected, and did not run it.
    const toolResults = JSON.stringify(chat.llm.requests.at(-1)?.body);
    expect(toolResults).toContain('rejected');
    expect(toolResults).not.toContain('FAKE-TOOL-OUTPUT\\n');
  });

  it('/allow: the command runs and the agent answers after it', async () => {
    await chat.askTool('turn two', '/allow', 2);
    expect(fs.readFileSync(chat.written, 'utf8')).toBe('FAKE-TOOL-OUTPUT\n');
    expect(JSON.stringify(chat.llm.requests.at(-1)?.body)).toContain('FAKE-TOOL-OUTPUT');
    // The second turn resumed the first one's thread: the model saw the earlier message.
    expect(replies(chat.tg, chat.user).some((o) => o.text.includes('PREVIOUS-USER-MESSAGE: ASK-TOOL turn one'))).toBe(true);
  });
});
