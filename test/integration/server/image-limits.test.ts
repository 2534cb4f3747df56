import { afterEach, describe, expect, it } from 'vitest';
import { parseSseStrict, startTestServer, type TestServer } from '../../helpers/server.js';

/**
 * Issue 12, item 10: the documented image limits (docs/api.md: at most 5 images, each at most
 * 5 MB decoded, in a body of at most 36 MB) are the ones the code applies.
 */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const MB5 = 5 * 1024 * 1024;
const pngOf = (bytes: number) => {
  const b = Buffer.alloc(bytes, 0);
  Buffer.from('89504e470d0a1a0a', 'hex').copy(b);
  return b.toString('base64');
};
const completion = async (res: Response) => (parseSseStrict(await res.text()) as Array<Record<string, unknown>>).at(-1);

describe('image limits over HTTP', () => {
  it('one byte over 5 MB is refused in-stream with the limit; five images of exactly 5 MB fit the body limit and run', async () => {
    s = await startTestServer();
    const over = await s.api('/chat', { json: { message: 'big', images: [{ data: pngOf(MB5 + 1) }] } });
    expect(over.status).toBe(200);
    expect(await completion(over)).toMatchObject({ status: 'failed', message: `images[0]: ${MB5 + 1} bytes is over the limit of ${MB5} bytes` });
    expect(s.standIn.runs()).toEqual([]);

    const five = await s.api('/chat', { json: { message: 'five', images: Array.from({ length: 5 }, () => ({ data: pngOf(MB5) })) } });
    expect(five.status).toBe(200);
    expect(await completion(five)).toMatchObject({ status: 'completed', finalText: expect.stringContaining('ECHO: five') });
  });
});
