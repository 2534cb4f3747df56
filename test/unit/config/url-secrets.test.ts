import { describe, expect, it } from 'vitest';
import { collectUrlSecrets, formatSafeUrl } from '../../../src/core/config/secrets.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/** Issue 29 (low): a store URL's password is masked in either form, from service.yaml or SERVICE_STORE_URL. */
describe('store URL credentials', () => {
  it('are masked in messages whether they are in the user part or a query parameter', () => {
    expect(formatSafeUrl('postgres://bot:hunter2@db:5432/a')).toBe('postgres://bot:***@db:5432/a');
    expect(formatSafeUrl('postgres://bot@db:5432/a?password=hunter2&sslmode=require')).toBe('postgres://bot@db:5432/a?password=***&sslmode=require');
    expect(formatSafeUrl('postgresql://db/a?user=bot&PASSWORD=x%40y&sslpassword=z')).toBe('postgresql://db/a?user=bot&PASSWORD=***&sslpassword=***');
    expect(formatSafeUrl('not a url hunter2')).toBe('the configured URL (it does not parse)');
  });

  it('are secret values of the loaded configuration, from store.url or SERVICE_STORE_URL, as written and decoded', () => {
    expect(collectUrlSecrets('postgres://bot@db/a?password=s3cr%40t-value')).toEqual(
      expect.arrayContaining(['postgres://bot@db/a?password=s3cr%40t-value', 's3cr@t-value', 's3cr%40t-value']),
    );
    const env = { SERVICE_STORE_URL: 'postgres://bot:env-pass-1234@db/a', FILE_DB: 'postgres://bot@db/b?password=file-pass-5678' };
    const { secretValues } = loadServiceConfig(testdir({ 'service.yaml': minimalYaml('engine_b', 'store:\n  url: ${FILE_DB}\n') }), env);
    for (const v of ['env-pass-1234', 'file-pass-5678', env.SERVICE_STORE_URL, env.FILE_DB]) expect(secretValues.has(v)).toBe(true);
  });
});
