import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FileEvent } from '../../../src/core/events.js';
import { INCOMING_FILE_LIMITS } from '../../../src/core/files/incoming.js';
import { formatLocalDay } from '../../../src/core/util/local-day.js';
import { assertEnding, collect, completionOf, createTestAssistant } from '../../helpers/assistant.js';

type Run = { prompt: string; env: Record<string, string> };
const filesOf = (events: Array<{ type: string }>) => events.filter((e): e is FileEvent => e.type === 'file');

describe('chat core: files out (the turn outbox)', () => {
  it('files the agent leaves in $SERVICE_OUTBOX come after the reply as file events; the outbox is emptied', async () => {
    const t = createTestAssistant();
    const events = await collect(t.assistant.chat('report please MAKE-FILE:report.pdf:2048 MAKE-FILE:chart.png:512 SAY:Here it is.'));
    assertEnding(events);
    const types = events.map((e) => e.type);
    expect(types.slice(-4)).toEqual(['file', 'file', 'done', 'completion']);
    expect(completionOf(events).finalText).toBe('Here it is.');
    const files = filesOf(events);
    expect(files.map(({ name, size, mimeType }) => ({ name, size, mimeType }))).toEqual([
      { name: 'chart.png', size: 512, mimeType: 'image/png' },
      { name: 'report.pdf', size: 2048, mimeType: 'application/pdf' },
    ]);
    for (const f of files) {
      expect(f.id).toMatch(/^[A-Za-z0-9_-]{16,}$/);
      expect(f.path).toBe(path.join(t.dir, '.service', 'files', f.id ?? '', f.name));
      expect(fs.statSync(f.path ?? '').size).toBe(f.size);
    }
    // The engine was told where: a fresh folder under .service/outbox, gone once the turn ended.
    const outbox = (t.standIn.runs()[0] as Run).env.SERVICE_OUTBOX ?? '';
    expect(path.dirname(outbox)).toBe(path.join(t.dir, '.service', 'outbox'));
    expect(fs.existsSync(outbox)).toBe(false);
    expect(fs.readdirSync(path.join(t.dir, '.service', 'outbox'))).toEqual([]);
    t.close();
  });

  it('links (never followed), folders and empty files are reported as not sent; nothing outside the outbox is read', async () => {
    const t = createTestAssistant();
    const secret = path.join(t.dir, 'secret.txt');
    fs.writeFileSync(secret, 'do not send');
    const events = await collect(t.assistant.chat(`files MAKE-LINK:escape.txt:${secret} MAKE-DIR:nested MAKE-FILE:empty.txt:0 MAKE-FILE:ok.txt:3`));
    const files = filesOf(events);
    expect(files.map((f) => [f.name, f.error ?? 'sent'])).toEqual([
      ['empty.txt', 'not sent: the file is empty'],
      ['ok.txt', 'sent'],
      ['escape.txt', 'not sent: a link (links are not followed)'],
      ['nested', 'not sent: a folder'],
    ]);
    expect(files.filter((f) => f.path).map((f) => fs.readFileSync(f.path ?? '', 'utf8'))).toEqual(['aaa']);
    expect(fs.readFileSync(secret, 'utf8')).toBe('do not send');
    t.close();
  });

  it('at most 10 files go with a reply; a failed turn sends none and still empties its outbox', async () => {
    const t = createTestAssistant();
    const many = Array.from({ length: 11 }, (_, i) => `MAKE-FILE:f${String(i).padStart(2, '0')}.txt:1`).join(' ');
    const files = filesOf(await collect(t.assistant.chat(`many ${many}`)));
    expect(files.filter((f) => !f.error)).toHaveLength(10);
    expect(files.at(-1)).toMatchObject({ name: 'f10.txt', error: 'not sent: at most 10 files go with one reply' });

    const failed = await collect(t.assistant.chat('MAKE-FILE:lost.txt:5 FAIL:boom'));
    expect(completionOf(failed).status).toBe('failed');
    expect(filesOf(failed)).toEqual([]);
    expect(fs.readdirSync(path.join(t.dir, '.service', 'outbox'))).toEqual([]);
    t.close();
  });
});

describe('chat core: files in (saved into the workspace)', () => {
  it('files are saved under inbox/<local day>/ with safe names and named in the prompt; an existing name is not overwritten', async () => {
    const t = createTestAssistant();
    const day = formatLocalDay(Date.now());
    const events = await collect(
      t.assistant.chat('summarise these', {
        files: [
          { name: 'notes.txt', data: Buffer.from('hello') },
          { name: '../../etc/passwd', data: Buffer.from('x').toString('base64') },
          { name: 'notes.txt', data: Buffer.from('second'), mimeType: 'text/plain' },
        ],
      }),
    );
    expect(completionOf(events).status).toBe('completed');
    const inbox = path.join(t.dir, 'inbox', day);
    expect(fs.readdirSync(inbox).sort()).toEqual(['notes (2).txt', 'notes.txt', 'passwd']);
    expect(fs.readFileSync(path.join(inbox, 'notes (2).txt'), 'utf8')).toBe('second');
    expect((t.standIn.runs()[0] as Run).prompt).toBe(
      [
        'summarise these',
        '',
        'Files sent with this message, saved in your workspace:',
        `- inbox/${day}/notes.txt (5 B, text/plain)`,
        `- inbox/${day}/passwd (1 B, application/octet-stream)`,
        `- inbox/${day}/notes (2).txt (6 B, text/plain)`,
      ].join('\n'),
    );
    // History keeps what the engine saw; the activity feed what the person wrote.
    expect((await t.store.readHistory('default'))[0]?.text).toContain(`inbox/${day}/passwd`);
    expect((await t.assistant.recentActivity(1))[0]?.messagePreview).toBe('summarise these');
    t.close();
  });

  it('a message of files only reads "(file)", as one of images only reads "(image)"; too many or too big files refuse the turn, nothing is saved', async () => {
    const t = createTestAssistant();
    await collect(t.assistant.chat('', { files: [{ name: 'a.csv', data: Buffer.from('1,2') }] }));
    expect((await t.assistant.recentActivity(1))[0]?.messagePreview).toBe('(file)');
    expect((t.standIn.runs()[0] as Run).prompt).toMatch(
      /^\(file\)\n\nFiles sent with this message, saved in your workspace:\n- inbox\/.*\/a\.csv \(3 B, text\/csv\)$/,
    );

    const big = await collect(t.assistant.chat('x', { files: [{ name: 'big.bin', data: Buffer.alloc(INCOMING_FILE_LIMITS.maxBytes + 1) }] }));
    expect(completionOf(big)).toMatchObject({ status: 'failed', message: 'files[0] big.bin: 20971521 bytes is over the limit of 20971520 bytes per file' });
    const many = Array.from({ length: 11 }, (_, i) => ({ name: `${i}.txt`, data: Buffer.from('x') }));
    expect(completionOf(await collect(t.assistant.chat('x', { files: many }))).message).toBe('Too many files: 11 (limit: 10 per message)');
    expect(completionOf(await collect(t.assistant.chat('x', { files: [{ name: 'a', data: 'not base64!' }] }))).message).toBe(
      'files[0]: data is not valid base64',
    );
    expect(fs.readdirSync(path.join(t.dir, 'inbox', formatLocalDay(Date.now())))).toEqual(['a.csv']);
    expect(t.standIn.runs()).toHaveLength(1);
    t.close();
  });
});
