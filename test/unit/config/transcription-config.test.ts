import { describe, expect, it } from 'vitest';
import { loadServiceConfig } from '../../../src/definitions.js';
import { ConfigError } from '../../../src/core/errors.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

const load = (yaml: string, env: NodeJS.ProcessEnv = {}) => loadServiceConfig(testdir({ 'service.yaml': yaml }), env);

function problemsOf(yaml: string): string[] {
  try {
    load(yaml);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('transcription and the progress note in service.yaml', () => {
  it('transcription: off unless configured; the key may come from the environment; model and timeout have defaults', () => {
    const { config, secretValues } = load(`${minimalYaml()}transcription:\n  baseUrl: https://api.openai.com/v1\n  apiKey: \${STT_KEY}\n`, {
      STT_KEY: 'sk-from-the-environment',
    });
    expect(config.transcription).toEqual({ baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-from-the-environment', model: 'whisper-1', timeoutSeconds: 60 });
    expect(secretValues.has('sk-from-the-environment')).toBe(true);
  });

  it('a bad transcription block names the field', () => {
    expect(problemsOf(`${minimalYaml()}transcription:\n  apiKey: x\n`).join('\n')).toMatch(/transcription\.baseUrl/);
    expect(problemsOf(`${minimalYaml()}transcription:\n  baseUrl: ftp://x\n`).join('\n')).toMatch(/transcription\.baseUrl.*http/);
    expect(problemsOf(`${minimalYaml()}transcription:\n  baseUrl: http://127.0.0.1:9/v1\n  modle: x\n`).join('\n')).toMatch(/modle/);
  });

  it('streaming.progressAfterSeconds: 20 by default, 0 turns the note off, negative is refused', () => {
    expect(load(`${minimalYaml()}streaming:\n  progressAfterSeconds: 0\n`).config.streaming.progressAfterSeconds).toBe(0);
    expect(problemsOf(`${minimalYaml()}streaming:\n  progressAfterSeconds: -1\n`).join('\n')).toMatch(/streaming\.progressAfterSeconds/);
  });
});
