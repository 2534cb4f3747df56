import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatLocalDay } from '../../../src/core/util/local-day.js';
import type { FakeOutbound, FakePlatform } from '../../fakes/platforms/types.js';
import { PLATFORMS, usePlatformGateway, type ChannelGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS } from '../../helpers/wait.js';

type Run = { prompt: string };
const MB = 1024 * 1024;

const reply = (f: FakePlatform, text: string) => f.waitForOutbound((o) => o.kind !== 'typing' && o.text.replace(/ +\n/g, '\n').includes(text), HANG_MS);
/** After a reply to the last message delivered: every message has been taken in; wait until all are processed. */
const settle = (g: ChannelGateway) => g.channels.bridge.idle();

describe.each(Object.values(PLATFORMS).filter((p) => p.files))('$key: files both ways through its real SDK and fake', (spec) => {
  const setup = usePlatformGateway(spec);
  const [alice] = spec.users;

  it("a document sent to the bot is saved into inbox/ and named in the prompt; a reply's files follow its text, pictures as pictures", async () => {
    const { fake: f, gw: g } = await setup();
    const notes = Buffer.from('meeting at 10\n');
    await f.deliver({ chatType: 'direct', userId: alice, text: '', files: [{ mimeType: 'text/plain', data: notes, fileName: 'notes.txt' }] });
    await reply(f, 'ECHO: (file)');
    const day = formatLocalDay(Date.now());
    expect(fs.readFileSync(path.join(g.dir, 'inbox', day, 'notes.txt'))).toEqual(notes);
    expect((g.standIn.runs()[0] as Run).prompt).toBe(
      `(file)\n\nFiles sent with this message, saved in your workspace:\n- inbox/${day}/notes.txt (14 B, text/plain)`,
    );

    await f.deliver({ chatType: 'direct', userId: alice, text: 'the report MAKE-FILE:report.pdf:2048 MAKE-FILE:chart.png:64 SAY:Here you go.' });
    await f.waitForOutbound((o) => o.file?.as === 'file', HANG_MS);
    await f.waitForOutbound((o) => o.file?.as === 'image', HANG_MS);
    const text = f.outbound.findIndex((o) => o.text.includes('Here you go.'));
    const files = f.outbound.filter((o): o is FakeOutbound & { file: NonNullable<FakeOutbound['file']> } => o.file !== undefined);
    expect(text).toBeGreaterThanOrEqual(0);
    for (const o of files) expect(f.outbound.indexOf(o)).toBeGreaterThan(text);
    expect(files.find((o) => o.file.as === 'file')?.file).toEqual({
      name: 'report.pdf',
      mimeType: 'application/pdf',
      data: Buffer.alloc(2048, 0x61),
      as: 'file',
    });
    expect(files.find((o) => o.file.as === 'image')?.file).toMatchObject({ data: Buffer.alloc(64, 0x89), as: 'image' });
    expect(fs.readdirSync(path.join(g.dir, '.service', 'outbox'))).toEqual([]);
  });

  it("a file over the platform's cap (or the 100 MB every reply keeps to) is not uploaded and the sender is told why", async () => {
    const { fake: f, gw: g } = await setup();
    const platformCap = spec.maxUpload ?? 0;
    // Sparse: the size is past the limit, no disk is written. Slack takes 1 GB: there the gateway's own cap speaks.
    const size = Math.min(platformCap, 100 * MB) + 1;
    await f.deliver({ chatType: 'direct', userId: alice, text: `big MAKE-SPARSE:big.bin:${size} SAY:Made it.` });
    await reply(
      f,
      platformCap > 100 * MB
        ? `Could not send big.bin: ${100 * MB + 1} bytes is over the limit of ${100 * MB} bytes.`
        : `Could not send big.bin (${size} bytes): files sent here can be at most ${platformCap} bytes.`,
    );
    await settle(g);
    expect(f.outbound.filter((o) => o.file)).toEqual([]);
    expect(f.rejections).toEqual([]);
    expect(fs.readdirSync(path.join(g.dir, '.service', 'outbox'))).toEqual([]);
  });

  it('a document with a hostile name (../../, NUL, a leading dot) is saved inside inbox/ under a safe name', async () => {
    const { fake: f, gw: g } = await setup();
    const data = Buffer.from('payload');
    await f.deliver({ chatType: 'direct', userId: alice, text: '', files: [{ mimeType: 'text/plain', data, fileName: '../../.evil\u0000name.txt' }] });
    await reply(f, 'ECHO: (file)');
    const day = formatLocalDay(Date.now());
    expect(fs.readdirSync(path.join(g.dir, 'inbox', day))).toEqual(['evil_name.txt']);
    expect(fs.readFileSync(path.join(g.dir, 'inbox', day, 'evil_name.txt'))).toEqual(data);
    expect(fs.existsSync(path.join(g.dir, '..', '.evil'))).toBe(false);
    expect((g.standIn.runs()[0] as Run).prompt).toContain(`- inbox/${day}/evil_name.txt (7 B, text/plain)`);
  });

  it('a document over 20 MB is not saved: the sender is told, and a message of nothing else runs no turn', async () => {
    const { fake: f, gw: g } = await setup();
    await f.deliver({
      chatType: 'direct',
      userId: alice,
      text: '',
      files: [{ mimeType: 'application/zip', data: Buffer.alloc(20 * MB + 1), fileName: 'dump.zip' }],
    });
    await reply(f, 'dump.zip');
    const notice = f.outbound.find((o) => o.text.includes('dump.zip'))?.text ?? '';
    // Its size is shown when the platform says it: one byte over reads in bytes, never "20.0 MB … at most 20.0 MB".
    expect(notice).toMatch(
      /^dump\.zip( \(20971521 bytes\) was not saved: files sent to me can be at most 20971520 bytes| was not saved: files sent to me can be at most 20\.0 MB)\.$/,
    );
    await settle(g);
    expect(g.standIn.runs()).toEqual([]);
    expect(fs.existsSync(path.join(g.dir, 'inbox'))).toBe(false);
  });
});

describe.each(Object.values(PLATFORMS))('$key: named sessions from the chat', (spec) => {
  const setup = usePlatformGateway(spec);
  const [alice] = spec.users;

  it('/new starts a fresh conversation, /sessions lists both, /switch goes back, /reset clears only the current one', async () => {
    const { fake: f, gw: g } = await setup();
    const say = async (text: string, expected: string) => {
      await f.deliver({ chatType: 'direct', userId: alice, text });
      await reply(f, expected).catch((e) => {
        throw new Error(`${String(e)}; sent: ${JSON.stringify(f.outbound.map((o) => o.text))}; refused: ${JSON.stringify(f.rejections)}`);
      });
      await settle(g);
    };
    const base = `${spec.key}:dm:${alice}`;
    await say('first topic', 'TURN: 1');
    await say('/new ideas', 'New session "ideas"');
    await say('fresh topic', 'ECHO: fresh topic\nTURN: 1');
    await say('/sessions', 'Sessions of this chat (2):');
    const listing = f.outbound.find((o) => o.text.includes('Sessions of this chat'))?.text ?? '';
    expect(listing).toMatch(/ideas .*1 turn/);
    expect(listing).toMatch(/main .*1 turn/);
    await say('/switch main', 'Switched to "main" (1 turn).');
    await say('back again', 'ECHO: back again\nTURN: 2');
    await say('/reset', 'Session reset');
    expect(await g.store.getSession(base)).toBeUndefined();
    expect((await g.store.getSession(`${base}#ideas`))?.turns).toBe(1);
    // GET /api/sessions names the chat's sessions.
    const listed = (await (await g.api('/api/sessions')).json()) as { sessions: Array<{ key: string; name?: string; current?: boolean }> };
    expect(listed.sessions.find((s) => s.key === `${base}#ideas`)).toMatchObject({ name: 'ideas', current: false });
  });
});
