import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { editConfigFile, editTask, mergePatch, mergeText } from '../../../src/core/config/write-back.js';
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

describe('config write-back: what is written round-trips (properties)', () => {
  const BASE = `${ORIGINAL}
persona:
  role: helper    # the role
  boundaries:
    - be kind     # first
    - be brief
`;
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  const text = fc.string({ maxLength: 12 });
  // No -0 (YAML has none), and no null members: a new object is written as sent, nulls and all,
  // while sending it again removes them (null removes a key of an existing mapping).
  const json = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v), (_k, x) => (isObject(x) ? dropNulls(x) : x)) as unknown);
  const dropNulls = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, x]) => x !== null));
  const task = fc.record({ id: fc.stringMatching(/^[a-z]{1,6}$/), name: text, schedule: fc.constant('0 9 * * *'), prompt: text });
  const patch = fc.record(
    {
      name: text,
      timeout: fc.integer({ min: 0, max: 100_000 }),
      'x-owner': fc.option(text),
      'x-new': json,
      groupChat: fc.record({ groupPolicy: fc.constantFrom('smart', 'always'), historyLimit: fc.option(fc.nat()) }, { requiredKeys: [] }),
      persona: fc.option(fc.record({ role: fc.option(text), boundaries: fc.option(fc.array(text, { maxLength: 4 })) }, { requiredKeys: [] })),
      tasks: fc.array(task, { maxLength: 3 }),
    },
    { requiredKeys: [] },
  );

  /** What the file should hold: objects merged key by key, arrays and scalars replaced, null removes. */
  const merged = (base: Record<string, unknown>, p: Record<string, unknown>): Record<string, unknown> => {
    const out = { ...base };
    for (const [k, v] of Object.entries(p)) {
      const cur = out[k];
      if (v === null) delete out[k];
      else if (isObject(v) && isObject(cur)) out[k] = merged(cur, v);
      else out[k] = v;
    }
    return out;
  };
  /** The original's top-level blocks: a key's line and the lines under it, up to a blank line. */
  const blocks = (yaml: string) => yaml.split(/\n(?=\S)/).map((b) => ({ key: /^([\w-]+):/.exec(b)?.[1], text: b.split('\n\n')[0] as string }));

  it('the file parses to the merged settings; untouched blocks keep every byte; applying it again changes nothing', () => {
    const base = parseDocument(BASE).toJS() as Record<string, unknown>;
    fc.assert(
      fc.property(patch, (p) => {
        const { text: out, raw } = mergeText({ text: BASE, file: 'service.yaml', patch: p, env: {} });
        expect(raw).toEqual(merged(base, p));
        expect(parseDocument(out).toJS()).toEqual(raw);
        for (const block of blocks(BASE).filter((b) => b.key && !(b.key in p))) expect(out).toContain(block.text);
        expect(mergeText({ text: out, file: 'service.yaml', patch: p, env: {} }).text).toBe(out);
      }),
      { numRuns: 200 },
    );
  });

  it('a file of 35,000 lines rewritten wholesale is written (the old N×M table: 5 GB, and minutes)', () => {
    const before = Array.from({ length: 35_000 }, (_, i) => `old-${i}`);
    const file = path.join(testdir({ 'service.yaml': `# keep me\nname: big\nx-list:\n${before.map((i) => `  - ${i}\n`).join('')}` }), 'service.yaml');
    const after = Array.from({ length: 35_000 }, (_, i) => (i % 2 ? `old-${i}` : `new-${i}`));
    editConfigFile(file, mergePatch({ 'x-list': after }, {}));
    const text = fs.readFileSync(file, 'utf8');
    expect(text.startsWith('# keep me\nname: big\nx-list:\n  - new-0\n  - old-1\n')).toBe(true);
    expect(parseDocument(text).toJS()).toEqual({ name: 'big', 'x-list': after });
  });
});
