import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/core/logger.js';

/** Issue 35, item 4: JSON log lines, with the text format's guarantees (one line per call, secrets masked, controls escaped). */
describe('the JSON log format', () => {
  const capture = () => {
    const lines: string[] = [];
    const log = createLogger({
      format: 'json',
      level: 'debug',
      component: 'gateway',
      write: (l) => lines.push(l),
      secrets: ['s3cret-value'],
      now: () => new Date(0),
    });
    return { lines, log };
  };

  it('writes time, level, component, message and the fields, children naming their component', () => {
    const { lines, log } = capture();
    log.info('serving');
    log.child('channels', { channel: 'c1' }).child('adapter').warn('dropped', { messageId: 'm1', attempt: 2, retry: true, gone: undefined });
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { time: '1970-01-01T00:00:00.000Z', level: 'info', component: 'gateway', message: 'serving' },
      {
        time: '1970-01-01T00:00:00.000Z',
        level: 'warn',
        component: 'channels.adapter',
        message: 'dropped',
        channel: 'c1',
        messageId: 'm1',
        attempt: 2,
        retry: true,
      },
    ]);
  });

  it('masks secrets in the message, the fields and the component, before encoding', () => {
    const { lines, log } = capture();
    log.addSecrets(['quote"and\\slash']);
    log.child('x-s3cret-value').error('token s3cret-value and quote"and\\slash', { path: '/a/s3cret-value', 's3cret-value': 'k' });
    expect(lines[0]).not.toContain('s3cret-value');
    expect(lines[0]).not.toContain('slash');
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ component: 'x-***', message: 'token *** and ***', path: '/a/***', '***': 'k' });
  });

  it('is one line whatever the text holds: controls, DEL, C1 controls and the Unicode line separators escaped', () => {
    const { lines, log } = capture();
    const nasty = 'a\nFORGED\r\u001b[31m\u007f\u0085\u2028\u2029\u0000z';
    log.info(nasty, { path: nasty });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^[\x20-\x7e]+$/);
    const back = JSON.parse(lines[0] ?? '') as { message: string; path: string };
    expect(back.message).toBe(nasty);
    expect(back.path).toBe(nasty);
  });

  it('a call cannot overwrite the record’s own keys', () => {
    const { lines, log } = capture();
    log.info('real', { message: 'forged', level: 'error', time: 'x', component: 'y' });
    expect(JSON.parse(lines[0] ?? '')).toEqual({ time: '1970-01-01T00:00:00.000Z', level: 'info', component: 'gateway', message: 'real' });
  });

  it('the text format is unchanged by fields', () => {
    const lines: string[] = [];
    createLogger({ write: (l) => lines.push(l) })
      .child('http')
      .info('404 Not Found GET /x', { status: 404 });
    expect(lines).toEqual(['[http] 404 Not Found GET /x']);
  });
});
