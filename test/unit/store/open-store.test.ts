import { describe, expect, it } from 'vitest';
import { isSecretPath, maskSecrets } from '../../../src/core/config/secrets.js';
import { resolveStoreTarget, schemaOfName } from '../../../src/core/store/open-store.js';

describe('which store an assistant uses', () => {
  const config = (store: { url?: string; schema?: string } = {}) => ({ name: 'Support Bot', store });

  it('the SQLite file by default; SERVICE_STORE_URL over store.url; the schema from store.schema or the name', () => {
    expect(resolveStoreTarget(config(), {}, '/a/.service/state.db')).toEqual({ kind: 'sqlite', file: '/a/.service/state.db' });
    expect(resolveStoreTarget(config({ url: 'postgres://h/db' }), {}, 'f')).toEqual({
      kind: 'postgres',
      url: 'postgres://h/db',
      schema: 'assistant_support_bot',
    });
    expect(resolveStoreTarget(config({ url: 'postgres://h/db', schema: 'mine' }), { SERVICE_STORE_URL: ' postgres://env/db ' }, 'f')).toEqual({
      kind: 'postgres',
      url: 'postgres://env/db',
      schema: 'mine',
    });
    expect(resolveStoreTarget(config(), { SERVICE_STORE_URL: '' }, 'f').kind).toBe('sqlite');
  });

  it('derives a schema name PostgreSQL accepts from any assistant name', () => {
    expect(schemaOfName('Support Bot')).toBe('assistant_support_bot');
    expect(schemaOfName('--')).toBe('assistant_default');
    expect(schemaOfName('数据')).toBe('assistant_default');
    expect(schemaOfName('x'.repeat(100))).toHaveLength(63);
    expect(schemaOfName('a-b.c')).toMatch(/^[a-z_][a-z0-9_]{0,62}$/);
  });

  it('store.url is a secret (it carries the password)', () => {
    expect(isSecretPath(['store', 'url'])).toBe(true);
    expect(isSecretPath(['store', 'schema'])).toBe(false);
    expect(maskSecrets({ store: { url: 'postgres://u:p@h/db', schema: 's' } })).toEqual({ store: { url: '********', schema: 's' } });
    expect(maskSecrets({ store: { url: '${DB_URL}' } })).toEqual({ store: { url: '${DB_URL}' } });
  });
});
