import { describe, expect, it } from 'vitest';
import { buildEngineEnv, createEngineApiAccess } from '../../../src/core/engines/engine-env.js';

/** What the engine inherits (issue 29, Medium 7): never the gateway's credentials; SERVICE_URL and its own token under a gateway. */
describe("the engine's environment", () => {
  const config = { gateway: {}, store: {} };
  const env = {
    PATH: '/usr/bin',
    HOME: '/home/me',
    ANTHROPIC_API_KEY: 'sk-ant-engine-needs-this',
    SERVICE_TOKEN: 'owner-admin-token',
    SERVICE_STORE_URL: 'postgres://svc:pg-secret@db.example/assist',
  };

  it('drops SERVICE_TOKEN and SERVICE_STORE_URL, keeps the rest', () => {
    expect(buildEngineEnv(env, config)).toEqual({ PATH: '/usr/bin', HOME: '/home/me', ANTHROPIC_API_KEY: 'sk-ant-engine-needs-this' });
  });

  it('drops every variable holding the resolved gateway.token, store.url or the store password, whatever its name', () => {
    const out = buildEngineEnv(
      { ...env, MY_TOKEN: 'tok-from-config', DATABASE_URL: 'postgres://u:p%40ss@h/db', PGPASSWORD: 'p@ss', OTHER: 'fine' },
      { gateway: { token: 'tok-from-config' }, store: { url: 'postgres://u:p%40ss@h/db' } },
    );
    expect(Object.keys(out).sort()).toEqual(['ANTHROPIC_API_KEY', 'HOME', 'OTHER', 'PATH']);
  });

  it("under a gateway: SERVICE_URL (a wildcard host is reached on loopback) and the engine's own token, once it listens", () => {
    const api = createEngineApiAccess();
    expect(buildEngineEnv(env, config, api).SERVICE_URL).toBeUndefined();
    api.describe({ host: '0.0.0.0', port: 4321 });
    const out = buildEngineEnv(env, config, api);
    expect(out.SERVICE_URL).toBe('http://127.0.0.1:4321');
    expect(out.SERVICE_TOKEN).toBe(api.token);
    expect(api.token).not.toBe('owner-admin-token');
    expect(out.SERVICE_STORE_URL).toBeUndefined();
    api.describe({ host: '::1', port: 80 });
    expect(api.url()).toBe('http://[::1]:80');
    expect(createEngineApiAccess().token).not.toBe(api.token);
  });
});
