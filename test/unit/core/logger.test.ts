import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/core/logger.js';

/** Issue 12, item 8: one log call is always one line, whatever the message holds. */
describe('the logger', () => {
  const capture = () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'debug', write: (l) => lines.push(l) });
    return { log, lines };
  };

  it('escapes line breaks and other control characters, so a message cannot forge a line', () => {
    const { log, lines } = capture();
    log.child('http').info('404 GET /dashboard/x: no file x\nFORGED line\r\n\u001b[2Jcleared\u0000\u2028sep\u0085nel\ttab');
    expect(lines).toEqual(['[http] 404 GET /dashboard/x: no file x\\nFORGED line\\r\\n\\x1b[2Jcleared\\x00\\u2028sep\\x85nel\ttab']);
  });

  it('escapes invisible and direction-changing characters, so a value cannot read as something else (issue 29)', () => {
    const { log, lines } = capture();
    log.info('name Bob\u202Egnp.exe\u200B\u2066x\u2069\uFEFF');
    expect(lines).toEqual(['name Bob\\u202egnp.exe\\u200b\\u2066x\\u2069\\ufeff']);
  });

  it('redacts secrets before escaping, also when a secret holds characters that get escaped', () => {
    const { log, lines } = capture();
    log.addSecrets(['sk-secret-value']);
    log.warn('key sk-secret-value\nnext');
    expect(lines).toEqual(['warn: key ***\\nnext']);
  });
});
