import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { editConfigFile, editTask, mergePatch } from '../../../src/core/config/write-back.js';
import { MASK } from '../../../src/core/config/secrets.js';
import { testdir } from '../../helpers/testdir.js';

const ORIGINAL = `# My assistant
name: helper   # shown in the dashboard
engine: engine_b

x-owner: platform team   # unknown to us, must survive
timeout: 600 # seconds

groupChat:
  # who the bot answers in groups
  groupPolicy: mention-only
  historyLimit: 20

channels:
  channel_e:
    botToken: \${TELEGRAM_TOKEN}   # from .env

tasks:
  - id: daily
    name: Daily digest
    schedule: "0 9 * * 1-5"
    prompt: Summarise yesterday
  - id: weekly
    name: Weekly
    schedule: "0 9 * * 1"
    prompt: Summarise the week
`;

function setup(): string {
  const dir = testdir({ 'service.yaml': ORIGINAL });
  return path.join(dir, 'service.yaml');
}

describe('config write-back', () => {
  it('changes only the patched key; comments, order, unknown keys and placeholders survive byte for byte', () => {
    const file = setup();
    editConfigFile(file, mergePatch({ timeout: 120, groupChat: { groupPolicy: 'smart' } }, {}));
    const expected = ORIGINAL.replace('timeout: 600 # seconds', 'timeout: 120 # seconds').replace('groupPolicy: mention-only', 'groupPolicy: smart');
    expect(fs.readFileSync(file, 'utf8')).toBe(expected);
  });

  it('never writes a resolved secret over its placeholder, nor the mask', () => {
    const file = setup();
    editConfigFile(file, mergePatch({ channels: { channel_e: { botToken: 'resolved-secret' } } }, { TELEGRAM_TOKEN: 'resolved-secret' }));
    editConfigFile(file, mergePatch({ channels: { channel_e: { botToken: MASK } } }, { TELEGRAM_TOKEN: 'resolved-secret' }));
    expect(fs.readFileSync(file, 'utf8')).toBe(ORIGINAL);
  });

  it('adds new nested keys and removes keys set to null', () => {
    const file = setup();
    editConfigFile(file, mergePatch({ streaming: { mode: 'streaming' }, groupChat: { historyLimit: null } }, {}));
    const text = fs.readFileSync(file, 'utf8');
    expect(text).not.toContain('historyLimit');
    expect(text).toContain('streaming:\n  mode: streaming\n');
    expect(text.startsWith('# My assistant\nname: helper   # shown in the dashboard\n')).toBe(true);
  });

  it('enables, disables and deletes tasks by id', () => {
    const file = setup();
    editConfigFile(file, editTask('weekly', { enabled: false }));
    expect(fs.readFileSync(file, 'utf8')).toContain('    prompt: Summarise the week\n    enabled: false\n');
    editConfigFile(file, editTask('daily', 'delete'));
    const text = fs.readFileSync(file, 'utf8');
    expect(text).not.toContain('Daily digest');
    expect(text).toContain('# who the bot answers in groups');
    expect(() => editConfigFile(file, editTask('nope', 'delete'))).toThrow(/No task with id "nope"/);
  });

  it('writes atomically: no temp file is left and the mode is kept', () => {
    const file = setup();
    fs.chmodSync(file, 0o600);
    editConfigFile(file, mergePatch({ timeout: 30 }, {}));
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['service.yaml']);
  });
});
