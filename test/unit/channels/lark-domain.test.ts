import { describe, expect, it } from 'vitest';
import { lark } from '../../../src/channels/lark/index.js';
import { ConfigError } from '../../../src/core/errors.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { testdir } from '../../helpers/testdir.js';

/** channel_a `domain`: the SDK's two named domains as users write them, or a base URL. */
const base = { appId: 'cli_0123456789abcdef', appSecret: 'secret' };
const domainOf = (domain: unknown) => lark.options.parse({ ...base, domain }).domain;

describe('channel_a domain', () => {
  it('"feishu" and "lark" (any case, spaces around) name the SDK\'s two domains', () => {
    expect(domainOf('feishu')).toBe('https://open.feishu.cn');
    expect(domainOf('lark')).toBe('https://open.larksuite.com');
    expect(domainOf(' Lark ')).toBe('https://open.larksuite.com');
    expect(domainOf('FEISHU')).toBe('https://open.feishu.cn');
  });

  it('a URL is the base itself (trailing slashes dropped); absent means Feishu in the adapter', () => {
    expect(domainOf('https://open.larksuite.com/')).toBe('https://open.larksuite.com');
    expect(domainOf('http://127.0.0.1:8123')).toBe('http://127.0.0.1:8123');
    expect(lark.options.parse(base).domain).toBeUndefined();
  });

  it('anything else is refused with what is accepted', () => {
    for (const bad of ['larksuite', 'ftp://open.feishu.cn', '', 42]) {
      const r = lark.options.safeParse({ ...base, domain: bad });
      expect(r.success).toBe(false);
      expect(r.error?.issues[0]?.message).toBe('expected feishu, lark or an http(s) URL');
    }
  });

  it('service.yaml: `domain: lark` loads; a typo is a config error naming the path', () => {
    const yaml = (domain: string) =>
      `name: bot\nengine: engine_b\nchannels:\n  channel_a:\n    appId: cli_0123456789abcdef\n    appSecret: s\n    domain: ${domain}\n`;
    const { config } = loadServiceConfig(testdir({ 'service.yaml': yaml('lark') }), {});
    expect((config.channels as Record<string, { domain?: string }>).channel_a?.domain).toBe('https://open.larksuite.com');
    try {
      loadServiceConfig(testdir({ 'service.yaml': yaml('larksiute') }), {});
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual(['channels.channel_a.domain: expected feishu, lark or an http(s) URL']);
    }
  });
});
