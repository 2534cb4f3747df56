import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maskSecretValues } from '../../../src/core/config/secrets.js';
import { createHealthMasking } from '../../../src/server/health.js';

/**
 * The listener's /health masks the body once per configuration and only the moving parts per
 * request; the answer must equal masking the whole body with every secret value seen so far,
 * whatever the secrets are (inside a name, inside a key, made of the characters of a time).
 */
const word = fc.stringMatching(/^[a-z0-9:T.Z-]{0,12}$/);
const secret = fc.oneof(
  fc.constantFrom('timestamp', 'uptime', 'status', '2026-01-01', '00:00', 'ok', 'bench-token-01234567'),
  fc.stringMatching(/^[a-z0-9:T.Z-]{4,12}$/),
);

describe('createHealthMasking', () => {
  it('equals maskSecretValues of the whole body, across bodies and configurations', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            secrets: fc.array(secret, { maxLength: 4 }),
            sameConfig: fc.boolean(),
            name: word,
            model: word,
            timestamp: fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
            uptime: fc.nat(),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        (requests) => {
          let loaded = { secretValues: [] as string[] };
          const deps = { config: { current: () => loaded, onChange: () => () => undefined }, token: 'the-gateway-token-0123' };
          const mask = createHealthMasking(deps as never);
          // Every secret value seen stays masked, as the app's redactor does it.
          const seen = new Set<string>([deps.token]);
          for (const r of requests) {
            if (!r.sameConfig) loaded = { secretValues: r.secrets };
            for (const v of loaded.secretValues) seen.add(v);
            const body = { status: 'ok', timestamp: r.timestamp, name: r.name, engine: 'engine_b', model: r.model, version: '0.1.0', uptime: r.uptime };
            const expected = maskSecretValues(body, [...seen]);
            expect(JSON.stringify(mask(body))).toBe(JSON.stringify(expected));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
