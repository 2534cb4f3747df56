import { describe, expect, it } from 'vitest';
import { loadServiceConfig } from '../../../src/definitions.js';
import { ConfigError } from '../../../src/core/errors.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

function load(yaml: string, env: NodeJS.ProcessEnv = {}) {
  return loadServiceConfig(testdir({ 'service.yaml': yaml }), env);
}

function problemsOf(yaml: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    load(yaml, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('config defaults from a minimal service.yaml', () => {
  it('fills every default of the spec table', () => {
    const { config } = load(minimalYaml());
    expect(config.name).toBe('test-bot');
    expect(config.engine).toBe('engine_b');
    expect(config.model).toBeUndefined();
    expect(config.skipPermissions).toBe(true);
    // Not in the spec's table: how long a chat approval waits for its answer (skipPermissions: false).
    expect(config.approvalTimeoutSeconds).toBe(300);
    expect(config.timeout).toBe(600);
    expect(config.maxConcurrent).toBe(10);
    expect(config.maxQueuePerSession).toBe(3);
    expect(config.sessionTtlDays).toBe(30);
    expect(config.systemPrompt).toBeUndefined();
    expect(config.permissions).toBeUndefined();
    expect((config as Record<string, unknown>).codex).toEqual({ mode: 'unrestricted', search: false, addDirs: [] });
    expect(config.streaming).toEqual({ mode: 'buffered', showToolCalls: false, progressAfterSeconds: 20 });
    expect(config.transcription).toBeUndefined();
    expect(config.groupChat).toEqual({ groupPolicy: 'mention-only', historyLimit: 20, maxTurns: 10 });
    expect(config.tasks).toEqual([]);
    expect(config.channels).toEqual({});
    expect(config.inbox).toEqual({ enabled: false, retentionDays: 7 });
    expect(config.historyFetch).toEqual({ enabled: false, pollIntervalMinutes: 15, initialLookbackMinutes: 60 });
    expect(config.oauthToken).toBeUndefined();
    expect(config.persona).toBeUndefined();
    expect(config.provider).toBeUndefined();
    // Not in the spec's table: the log format, and whether GET /metrics needs the token (issue 35).
    expect(config.gateway).toEqual({ port: 3000, host: '127.0.0.1', logFormat: 'text' });
    expect(config.metrics).toEqual({ public: false });
    expect(config.mcp).toBeUndefined();
    // Not in the spec's table: who may use the assistant from the channels (pairing by default).
    expect(config.access).toEqual({
      dm: 'pairing',
      groups: 'pairing',
      allow: [],
      chats: [],
      admins: [],
      rateLimit: { messages: 20, perSeconds: 60 },
      dailyBudgetUsd: 0,
      reservePerTurnUsd: 0,
    });
  });

  it('access: entries are "<channel>:<id>"; "<channel>:*" only in allow; numbers and policies checked', () => {
    const ok = load(minimalYaml('engine_b', 'access:\n  dm: open\n  allow: ["tg:*", "tg:-100:x"]\n  rateLimit: { messages: "5" }\n'));
    expect(ok.config.access).toMatchObject({ dm: 'open', groups: 'pairing', allow: ['tg:*', 'tg:-100:x'], rateLimit: { messages: 5, perSeconds: 60 } });
    const problems = problemsOf(
      minimalYaml(
        'engine_b',
        'access:\n  dm: closed\n  allow: [nobody]\n  admins: ["tg:*"]\n  chats: ["tg: spaced"]\n  rateLimit: { perSeconds: 0 }\n  dailyBudgetUsd: -1\n  extra: 1\n',
      ),
    );
    // Every problem at once, each at its path (the wording of the generic ones belongs to issues.ts).
    expect(problems.map((p) => p.slice(0, p.indexOf(':', p.indexOf(']') + 1)))).toEqual([
      'access.admins[0]',
      'access.allow[0]',
      'access.chats[0]',
      'access.dailyBudgetUsd',
      'access.dm',
      'access.extra',
      'access.rateLimit.perSeconds',
    ]);
    expect(problems).toContain('access.admins[0]: name one user or chat here; "<channel>:*" is only for access.allow');
    expect(problems).toContain('access.allow[0]: expected "<channel>:<id>"');
  });

  it('fills nested defaults of objects that are present', () => {
    const { config } = load(
      minimalYaml(
        'engine_b',
        `tasks:\n  - { id: daily, name: Daily, schedule: "0 9 * * *", prompt: hi }\nprovider:\n  baseUrl: http://127.0.0.1:9\ncodex:\n  sandbox: read-only\n`,
      ),
    );
    expect(config.tasks[0]).toMatchObject({ enabled: true });
    expect(config.tasks[0]?.target).toBeUndefined();
    expect(config.provider?.failoverThreshold).toBe(3);
    expect((config as Record<string, unknown>).codex).toEqual({ mode: 'unrestricted', sandbox: 'read-only', search: false, addDirs: [] });
  });

  it('requires name and engine', () => {
    expect(problemsOf('model: x\n')).toEqual([
      'engine: required (one of engine_a (Cursor agent CLI, alias cursor), engine_b (Claude Code, alias claude), engine_c (OpenCode, alias opencode), engine_d (Codex CLI, alias codex), engine_e (Gemini CLI, alias gemini), engine_f (Qwen Code, alias qwen), acp (ACP agent))',
      'name: required (string)',
    ]);
  });
});

describe('config validation messages', () => {
  const enums: Array<[string, string, string, string]> = [
    [
      'engine: engine_x',
      'engine',
      'engine_a (Cursor agent CLI, alias cursor), engine_b (Claude Code, alias claude), engine_c (OpenCode, alias opencode), engine_d (Codex CLI, alias codex), engine_e (Gemini CLI, alias gemini), engine_f (Qwen Code, alias qwen), acp (ACP agent)',
      'engine_x',
    ],
    ['codex: { mode: wild }', 'codex.mode', 'unrestricted|safe', 'wild'],
    ['codex: { sandbox: none }', 'codex.sandbox', 'read-only|workspace-write|danger-full-access', 'none'],
    ['codex: { approval: maybe }', 'codex.approval', 'untrusted|on-request|never', 'maybe'],
    ['streaming: { mode: live }', 'streaming.mode', 'buffered|streaming', 'live'],
    ['groupChat: { groupPolicy: all }', 'groupChat.groupPolicy', 'mention-only|smart|always', 'all'],
    ['mcp: { s: { url: "http://x.test", type: ws } }', 'mcp.s.type', 'http|sse', 'ws'],
  ];
  it.each(enums)('rejects %s with its path and choices', (line, pathText, choices, bad) => {
    const yaml = line.startsWith('engine:') ? `name: x\n${line}\n` : minimalYaml('engine_b', `${line}\n`);
    expect(problemsOf(yaml)).toEqual([`${pathText}: expected one of ${choices}, got "${bad}"`]);
  });

  it('pins the example message of the issue', () => {
    expect(problemsOf(minimalYaml('engine_b', 'groupChat:\n  groupPolicy: all\n'))).toEqual([
      'groupChat.groupPolicy: expected one of mention-only|smart|always, got "all"',
    ]);
  });

  it('reports every problem at once, sorted by path, in one error naming the file', () => {
    const dir = testdir({
      'service.yaml': [
        'name: x',
        'engine: engine_b',
        'timeout: soon',
        'maxConcurrent: 0',
        'groupChat:',
        '  groupPolicy: all',
        '  histroyLimit: 5',
        'tasks:',
        '  - { id: a, name: A, schedule: "every day", prompt: p }',
        'channels:',
        '  channel_e: {}',
        '  telegrm: { botToken: x }',
        'colour: blue',
      ].join('\n'),
    });
    let error: ConfigError | undefined;
    try {
      loadServiceConfig(dir, {});
    } catch (err) {
      error = err as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.message).toContain(`${dir}/service.yaml: 7 problems`);
    expect(error?.problems).toEqual([
      'channels.channel_e.botToken: required (the bot token from BotFather)',
      'channels.telegrm._adapter: unknown channel; use one of channel_a, channel_b, channel_c, channel_d, channel_e, channel_f, or add an `_adapter` field naming a custom adapter module',
      'colour: unknown key (extension keys must start with "x-")',
      'groupChat.groupPolicy: expected one of mention-only|smart|always, got "all"',
      'groupChat.histroyLimit: unknown key',
      'maxConcurrent: must be at least 1',
      'timeout: expected number, got string',
    ]);
  });

  it('checks cron expressions once the rest is valid', () => {
    expect(problemsOf(minimalYaml('engine_b', 'tasks:\n  - { id: a, name: A, schedule: "every day", prompt: p }\n'))).toEqual([
      'tasks[0].schedule: expected a cron expression with 5 fields (minute hour day-of-month month day-of-week), got 2',
    ]);
  });

  it("takes a program's name for an engine id: in engine and as a key of provider.models", () => {
    const names = { cursor: 'engine_a', claude: 'engine_b', opencode: 'engine_c', codex: 'engine_d', gemini: 'engine_e', qwen: 'engine_f' };
    for (const [name, id] of Object.entries(names)) expect(load(minimalYaml(name)).config.engine).toBe(id);
    const { config, raw } = load(minimalYaml('claude', 'provider:\n  models: { codex: gpt-5, engine_c: a/b }\n'));
    expect(config.provider?.models).toEqual({ engine_d: 'gpt-5', engine_c: 'a/b' });
    expect(raw.engine).toBe('claude'); // the file is read, not rewritten
  });

  it('an unknown engine lists every id with its program and alias', () => {
    expect(problemsOf(minimalYaml('claud'))).toEqual([
      'engine: expected one of engine_a (Cursor agent CLI, alias cursor), engine_b (Claude Code, alias claude), engine_c (OpenCode, alias opencode), engine_d (Codex CLI, alias codex), engine_e (Gemini CLI, alias gemini), engine_f (Qwen Code, alias qwen), acp (ACP agent), got "claud"',
    ]);
    expect(problemsOf('name: x\n')).toEqual([
      expect.stringMatching(/^engine: required \(one of engine_a \(Cursor agent CLI, alias cursor\), .*acp \(ACP agent\)\)$/),
    ]);
  });

  it('rejects model overrides for unknown engines', () => {
    expect(problemsOf(minimalYaml('engine_b', 'provider:\n  models: { engine_z: m }\n'))).toEqual(['provider.models.engine_z: unknown key']);
  });

  it('rejects duplicate task ids', () => {
    const t = '{ id: a, name: A, schedule: "0 9 * * *", prompt: p }';
    expect(problemsOf(minimalYaml('engine_b', `tasks:\n  - ${t}\n  - ${t}\n`))).toEqual(['tasks[1].id: duplicate task id "a"']);
  });

  it('never echoes a secret value', () => {
    const secret = 'xoxb-super-secret-value';
    const problems = problemsOf(
      minimalYaml('engine_b', `oauthToken: 42\nchannels:\n  channel_d: { botToken: ${secret}, appToken: 7 }\ngateway: { token: ${secret}, port: nope }\n`),
    );
    expect(problems.join('\n')).not.toContain(secret);
    expect(problems).toContain('channels.channel_d.appToken: expected string, got number');
  });

  it('accepts x- extension keys and custom adapters with free fields', () => {
    const { config } = load(minimalYaml('engine_b', 'x-owner: ops team\nchannels:\n  mychat: { _adapter: ./adapter.mjs, apiKey: k, rooms: [a, b] }\n'));
    expect(config.channels.mychat).toEqual({ _adapter: './adapter.mjs', apiKey: 'k', rooms: ['a', 'b'] });
  });

  it('custom channel keys: the built-in sources are reserved and keys are [a-z0-9_-], each named with the file (issue 29)', () => {
    const dir = testdir({
      'service.yaml': minimalYaml(
        'engine_b',
        [
          'channels:',
          '  terminal: { _adapter: ./a.mjs }',
          '  http: { _adapter: ./a.mjs }',
          '  cron: { _adapter: ./a.mjs }',
          '  "a:b": { _adapter: ./a.mjs }',
          '  "x y": { _adapter: ./a.mjs }',
          '  __x: { _adapter: ./a.mjs }',
          '  Chat: { _adapter: ./a.mjs }',
          '  my-chat_2: { _adapter: ./a.mjs }',
          '  nope: {}',
          '',
        ].join('\n'),
      ),
    });
    let error: ConfigError | undefined;
    try {
      loadServiceConfig(dir, {});
    } catch (err) {
      error = err as ConfigError;
    }
    expect(error?.message).toContain(`${dir}/service.yaml: 8 problems`);
    const keyRule = 'a custom channel key uses lower-case letters, digits, "_" and "-" (at most 40, starting with a letter or a digit)';
    const reserved = (k: string) =>
      `channels.${k}: "${k}" is reserved (terminal, http, cron, api, dashboard, system, service name the owner's own sources); pick another key`;
    expect(error?.problems).toEqual(
      expect.arrayContaining([
        reserved('terminal'),
        reserved('http'),
        reserved('cron'),
        `channels.a:b: ${keyRule}`,
        `channels.x y: ${keyRule}`,
        `channels.__x: ${keyRule}`,
        `channels.Chat: ${keyRule}`,
      ]),
    );
    expect(error?.problems.join('\n')).not.toContain('my-chat_2');
  });

  it('strips a nested provider fallback with a warning', () => {
    const loaded = load(
      minimalYaml('engine_b', 'provider:\n  baseUrl: http://a.test\n  fallback:\n    baseUrl: http://b.test\n    fallback: { baseUrl: http://c.test }\n'),
    );
    expect(loaded.config.provider?.fallback).toEqual({ baseUrl: 'http://b.test' });
    expect(loaded.warnings).toEqual(['provider.fallback.fallback: a nested fallback is ignored']);
  });

  it('reports a YAML syntax error with its line and column', () => {
    expect(problemsOf('name: x\nengine: [engine_b\ntimeout: 5\n')).toEqual([expect.stringMatching(/^line \d+, column \d+: Flow sequence/)]);
  });

  it('hints at quoting placeholders inside flow mappings', () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'channels:\n  channel_e: { botToken: ${TG} }\n') });
    expect(() => loadServiceConfig(dir, { TG: 'x' })).toThrow(expect.objectContaining({ hint: expect.stringContaining('quote ${VAR}') }));
  });
});

describe('gateway.logFormat and metrics.public (issue 35)', () => {
  it('take their values, and name the field when wrong', () => {
    const ok = load(`${minimalYaml()}gateway:\n  logFormat: json\nmetrics:\n  public: "true"\n`).config;
    expect(ok.gateway.logFormat).toBe('json');
    expect(ok.metrics.public).toBe(true);
    expect(problemsOf(`${minimalYaml()}gateway:\n  logFormat: xml\n`)).toEqual([expect.stringMatching(/^gateway\.logFormat: /)]);
    expect(problemsOf(`${minimalYaml()}metrics:\n  public: sometimes\n`)).toEqual([expect.stringMatching(/^metrics\.public: /)]);
    expect(problemsOf(`${minimalYaml()}metrics:\n  open: true\n`)).toEqual(['metrics.open: unknown key']);
  });
});

describe('store.failoverSeconds (one assistant on two hosts)', () => {
  it('defaults to 15, takes any number of seconds from 1, and names the field when below', () => {
    expect(load(minimalYaml()).config.store.failoverSeconds).toBe(15);
    expect(load(`${minimalYaml()}store:\n  failoverSeconds: 1.5\n`).config.store.failoverSeconds).toBe(1.5);
    expect(problemsOf(`${minimalYaml()}store:\n  failoverSeconds: 0.5\n`)).toEqual([expect.stringMatching(/^store\.failoverSeconds: /)]);
    expect(problemsOf(`${minimalYaml()}store:\n  failoverSeconds: soon\n`)).toEqual([expect.stringMatching(/^store\.failoverSeconds: /)]);
  });
});
