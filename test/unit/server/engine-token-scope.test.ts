import { describe, expect, it } from 'vitest';
import { engineMayCall, identifyToken } from '../../../src/server/auth.js';

/** The engine's own token (issue 29, Medium 7): which token a request holds, and where the engine's may go. */
describe("the engine's token: send-only", () => {
  it('tells the gateway token (the owner) from the engine token; anything else is neither', () => {
    const tokens = { gateway: 'owner-token-0123456789', engine: 'engine-token-0123456789' };
    expect(identifyToken('owner-token-0123456789', tokens)).toBe('owner');
    expect(identifyToken('engine-token-0123456789', tokens)).toBe('engine');
    expect(identifyToken('engine-token-012345678', tokens)).toBeUndefined();
    expect(identifyToken('engine-token-0123456789', { gateway: 'owner-token-0123456789' })).toBeUndefined();
  });

  it('may send (POST /api/send), list channels and fetch sent files; nothing else', () => {
    for (const [method, path] of [
      ['POST', '/api/send'],
      ['POST', '/api/send/'],
      ['GET', '/api/channels'],
      ['HEAD', '/api/channels'],
      ['GET', '/api/files/abc/report.pdf'],
    ] as const) {
      expect(engineMayCall(method, path), `${method} ${path}`).toBe(true);
    }
    for (const [method, path] of [
      ['GET', '/api/send'],
      ['POST', '/api/channels'],
      ['POST', '/chat'],
      ['POST', '/command'],
      ['POST', '/approve'],
      ['POST', '/abort'],
      ['POST', '/reset'],
      ['GET', '/api/config'],
      ['PATCH', '/api/config'],
      ['GET', '/api/config/effective'],
      ['GET', '/api/status'],
      ['GET', '/api/events'],
      ['GET', '/api/access'],
      ['POST', '/api/access/approve'],
      ['GET', '/api/sessions'],
      ['POST', '/api/tasks/x/run'],
      ['GET', '/api/escalations'],
      ['DELETE', '/api/files/abc/report.pdf'],
      ['GET', '/api/sendx'],
    ] as const) {
      expect(engineMayCall(method, path), `${method} ${path}`).toBe(false);
    }
  });
});
