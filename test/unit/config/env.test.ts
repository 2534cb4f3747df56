import { describe, expect, it } from 'vitest';
import { loadServiceConfig } from '../../../src/definitions.js';
import { ConfigError } from '../../../src/core/errors.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

describe('${VAR} placeholders', () => {
  it('resolves placeholders anywhere in string values and coerces numbers for numeric fields', () => {
    const dir = testdir({
      'service.yaml': minimalYaml('engine_b', 'systemPrompt: "You work for ${COMPANY} in ${CITY}."\ngateway:\n  port: ${PORT}\n  token: ${TOKEN}\n'),
    });
    const loaded = loadServiceConfig(dir, { COMPANY: 'Acme', CITY: 'Oslo', PORT: '4123', TOKEN: 'tok-123' });
    expect(loaded.config.systemPrompt).toBe('You work for Acme in Oslo.');
    expect(loaded.config.gateway).toEqual({ host: '127.0.0.1', port: 4123, token: 'tok-123', logFormat: 'text' });
    expect([...loaded.placeholderPaths].sort()).toEqual(['gateway.port', 'gateway.token', 'systemPrompt']);
    expect(loaded.raw.gateway).toEqual({ port: '${PORT}', token: '${TOKEN}' });
  });

  it('a missing variable in a top-level field is an error naming the field and the variable', () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'provider:\n  baseUrl: http://x.test\n  apiKey: ${PROVIDER_KEY}\n') });
    expect(() => loadServiceConfig(dir, {})).toThrow(ConfigError);
    try {
      loadServiceConfig(dir, {});
    } catch (err) {
      expect((err as ConfigError).problems).toEqual(['provider.apiKey: environment variable PROVIDER_KEY is not set']);
    }
  });

  it('a missing variable inside a channel block only disables that channel', () => {
    const dir = testdir({
      'service.yaml': minimalYaml(
        'engine_b',
        'channels:\n  channel_d:\n    botToken: ${SLACK_BOT}\n    appToken: ${SLACK_APP}\n  channel_e:\n    botToken: "${TG_TOKEN}"\n',
      ),
    });
    const loaded = loadServiceConfig(dir, { TG_TOKEN: '1:abc' });
    expect(Object.keys(loaded.config.channels)).toEqual(['channel_e']);
    expect(loaded.disabledChannels).toEqual([{ name: 'channel_d', reason: 'channels.channel_d.botToken: environment variable SLACK_BOT is not set' }]);
    expect(loaded.warnings).toEqual([
      'channels.channel_d.botToken: environment variable SLACK_BOT is not set; channel channel_d is disabled',
      'channels.channel_d.appToken: environment variable SLACK_APP is not set; channel channel_d is disabled',
    ]);
  });

  it('an empty variable counts as missing', () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'oauthToken: ${CLAUDE_TOKEN}\n') });
    expect(() => loadServiceConfig(dir, { CLAUDE_TOKEN: '' })).toThrow(/oauthToken: environment variable CLAUDE_TOKEN is not set/);
  });
});
