/**
 * Trust in chat with the real Claude Code CLI (devDependency) against the scripted LLM on
 * 127.0.0.1, through the real gateway and a fake Telegram (issue 29):
 *
 * - a non-admin cannot become admin through the agent (skipPermissions: true, the agent runs what
 *   it is told): a plain `sed` on service.yaml is stopped by Claude Code's own deny rules, which
 *   the turn gets; an obfuscated write gets past them and is undone after the turn, never
 *   applied (`/model` stays refused); the same write in an admin's turn is applied;
 * - the built-in message-push skill, its own curl commands run by the agent, sends through
 *   `/api/send` with the engine's SERVICE_URL and token (the gateway started with a token, as
 *   `--token` does), while that token gets 403 on an admin route and the owner's token is not in
 *   the engine's environment;
 * - (skipPermissions: false) the three commands that once hid their harmful part from an
 *   approval prompt show it, and, denied, never run it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSilentLogger } from '../../src/core/logger.js';
import { templatesDir } from '../../src/core/paths.js';
import { type Gateway, launchGateway } from '../../src/gateway.js';
import { type FakeLlm, startFakeLlm } from '../fakes/fake-llm.js';
import { startFakeTelegram } from '../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../fakes/platforms/types.js';
import { type ApprovalChat, startApprovalChat } from '../helpers/approval-chat.js';
import { replies } from '../helpers/channel-gateway.js';
import { isAlive } from '../helpers/stand-in.js';
import { HIDDEN_COMMANDS } from '../helpers/hidden-commands.js';
import { createRealEngineRoot, fakeProviderYaml, type RealEngineRoot } from '../helpers/real-engine.js';
import { until } from '../helpers/wait.js';

const HANG_MS = 5 * 60_000;
vi.setConfig({ testTimeout: 15 * 60_000, hookTimeout: 15 * 60_000 });

const OWNER_TOKEN = 'e2e-owner-token-0123456789';
const ADMIN = '1009';
const MEMBER = '1001';
const run = (command: string) => `RUN-COMMAND-B64:${Buffer.from(command, 'utf8').toString('base64')}`;
/** A Python program run through base64: no file name a deny rule could match appears in the command. */
const python = (program: string) => `python3 -c "$(echo ${Buffer.from(program).toString('base64')} | base64 -d)"`;
const addAdmin = (id: string) =>
  python(`p = "serv" + "ice.yaml"\ns = open(p).read()\nopen(p, "w").write(s.replace('"channel_e:${ADMIN}"]', '"channel_e:${ADMIN}", "channel_e:${id}"]'))\n`);

describe('engine_b (real Claude Code): the admin boundary and the engine token', () => {
  let llm: FakeLlm;
  let tg: FakePlatform;
  let root: RealEngineRoot;
  let gateway: Gateway;
  const file = () => path.join(root.dir, 'service.yaml');
  const said = (user: string, text: string) => replies(tg, user).filter((o) => o.text.includes(text)).length;
  const turn = async (user: string, text: string, expectReply: string) => {
    const before = said(user, expectReply);
    await tg.deliver({ chatType: 'direct', userId: user, text });
    await until(() => said(user, expectReply) > before, HANG_MS, `"${expectReply}" for ${user}`, 50);
    return replies(tg, user).at(-1)?.text ?? '';
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    tg = await startFakeTelegram();
    root = createRealEngineRoot('service-e2e-trust-', [
      'name: e2e-trust',
      'engine: engine_b',
      'timeout: 600',
      ...fakeProviderYaml(llm.url),
      `channels: ${JSON.stringify({ channel_e: tg.channelConfig })}`,
      `access: { dm: open, groups: open, admins: ["channel_e:${ADMIN}"] }`,
    ]);
    fs.cpSync(path.join(templatesDir(), 'skills', 'message-push'), path.join(root.dir, 'skills', 'message-push'), { recursive: true });
    gateway = await launchGateway({
      dir: root.dir,
      port: 0,
      token: OWNER_TOKEN,
      log: createSilentLogger(),
      env: { ...root.env, SERVICE_TOKEN: 'owner-token-from-the-environment', SERVICE_FLEET_DIR: `${root.root}/fleet` },
    });
    await gateway.channels.settled();
    await tg.waitForConnection(HANG_MS);
  });
  afterAll(async () => {
    await gateway?.channels.idle();
    await gateway?.close(0);
    await tg?.close();
    await llm?.close();
    root?.remove();
  });

  it("a member's sed on service.yaml is refused by Claude Code's deny rules", async () => {
    const before = fs.readFileSync(file(), 'utf8');
    const reply = await turn(MEMBER, run(`sed -i 's/"channel_e:${ADMIN}"]/"channel_e:${ADMIN}", "channel_e:${MEMBER}"]/' service.yaml`), 'FAKE-LLM-REPLY');
    expect(fs.readFileSync(file(), 'utf8')).toBe(before);
    // Nothing reached the file, so the check after the turn had nothing to undo.
    expect(reply).not.toContain('was undone');
    expect(JSON.stringify(llm.requests.at(-1)?.body)).toContain('has been denied');
  });

  it("a member's obfuscated write is undone after the turn and never applied; /model stays refused", async () => {
    const before = fs.readFileSync(file(), 'utf8');
    const reply = await turn(MEMBER, run(addAdmin(MEMBER)), 'FAKE-LLM-REPLY');
    expect(reply).toContain("This turn changed service.yaml: only an admin may change the assistant's own settings, so that was undone.");
    expect(fs.readFileSync(file(), 'utf8')).toBe(before);
    const kept = fs.readdirSync(path.join(root.dir, '.service', 'rejected'));
    expect(kept).toHaveLength(1);
    expect(fs.readFileSync(path.join(root.dir, '.service', 'rejected', kept[0] ?? ''), 'utf8')).toContain(`"channel_e:${MEMBER}"`);
    expect(gateway.directory.config.current().config.access.admins).toEqual([`channel_e:${ADMIN}`]);
    const refused = await turn(MEMBER, '/model sonnet', 'admin');
    expect(refused).toMatch(/changes the assistant's configuration/);
  });

  it("a member's background job, meant to write after the turn's check, dies with the turn on the warm process", async () => {
    // A session of its own, its tool shell gone at once: only the run's marker relates it.
    const late = `setsid sh -c 'echo $$ > late.pid; sleep 300; ${addAdmin(MEMBER)}' > /dev/null 2>&1 & until [ -s late.pid ]; do sleep 0.05; done`;
    await turn(MEMBER, run(late), 'FAKE-LLM-REPLY');
    // The turn ran on the conversation's resident Claude Code (warm engines are on by default).
    expect(gateway.directory.assistant.engine.warm.processes().map((p) => p.sessionKey)).toContainEqual(expect.stringContaining(MEMBER));
    const pid = Number(fs.readFileSync(path.join(root.dir, 'late.pid'), 'utf8'));
    expect(pid).toBeGreaterThan(0);
    const survived = isAlive(pid);
    if (survived) process.kill(pid, 'SIGKILL');
    expect(survived).toBe(false);
  });

  it("the same write in an admin's turn is applied", async () => {
    await turn(ADMIN, run(addAdmin('1002')), 'FAKE-LLM-REPLY');
    await until(() => gateway.directory.config.current().config.access.admins.includes('channel_e:1002'), HANG_MS, 'the new admin applied');
    expect(fs.readFileSync(file(), 'utf8')).toContain('"channel_e:1002"');
  });

  it("message-push: the skill's own curl commands send with the engine's URL and token; the token is refused on admin routes", async () => {
    const skill = fs.readFileSync(path.join(root.dir, 'skills', 'message-push', 'SKILL.md'), 'utf8');
    const [listChannels, send] = [...skill.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]?.trim() ?? '');
    expect(send).toContain('/api/send');
    const script = [
      `${listChannels} > channels.json`,
      `${send?.replace('-1001234567890', '1002')} > send.json`,
      `curl -s -o /dev/null -w '%{http_code}' "$SERVICE_URL/api/config" -H "Authorization: Bearer $SERVICE_TOKEN" > config.status`,
      'printenv SERVICE_TOKEN > engine-token.txt; printenv SERVICE_STORE_URL > store-url.txt; true',
    ].join('\n');
    await turn(MEMBER, run(script), 'FAKE-LLM-REPLY');
    const read = (name: string) => fs.readFileSync(path.join(root.dir, name), 'utf8');
    expect((JSON.parse(read('channels.json')) as { channels: unknown[] }).channels).toContainEqual(
      expect.objectContaining({ name: 'channel_e', canSend: true }),
    );
    expect(JSON.parse(read('send.json'))).toEqual({ ok: true });
    await until(() => said('1002', 'Nightly backup finished') > 0, HANG_MS, 'the pushed message in chat 1002');
    expect(read('config.status')).toBe('403');
    const engineToken = read('engine-token.txt').trim();
    expect(engineToken).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect([OWNER_TOKEN, 'owner-token-from-the-environment']).not.toContain(engineToken);
    expect(read('store-url.txt')).toBe('');
  });
});

describe('engine_b (real Claude Code): an approval prompt shows what runs', () => {
  let chat: ApprovalChat;
  beforeAll(async () => {
    chat = await startApprovalChat({ engine: 'engine_b', prefix: 'service-e2e-shown-', hangMs: HANG_MS });
  });
  afterAll(() => chat?.close());

  it.each(HIDDEN_COMMANDS.map((h, i) => ({ ...h, i })))(
    '$name: the hidden part is in the prompt; denied, it never runs',
    async ({ command, shown, marker, i }) => {
      await chat.send(run(command));
      await chat.waitFor('Approval needed', i + 1);
      const prompt = replies(chat.tg, chat.user).filter((o) => o.text.includes('Approval needed'))[i]?.text ?? '';
      expect(prompt).toContain(shown);
      await chat.send('/deny');
      await chat.waitFor('FAKE-LLM-REPLY: RUN-COMMAND-B64', i + 1);
      expect(fs.existsSync(path.join(chat.dir, marker))).toBe(false);
    },
  );
});
