import { z } from 'zod';

/** Option field helpers shared by the channel definitions. */
export const required = (what: string) =>
  z.string({ error: (iss) => (iss.input === undefined ? `required (${what})` : undefined) }).min(1, `must not be empty (${what})`);

export const baseUrl = () => z.url({ protocol: /^(https?|wss?)$/, error: 'expected an http(s) or ws(s) URL' }).optional();

export const seconds = () => z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v), z.number().gt(0));

/** A yes/no option; `true`/`false` written as text (a `${VAR}`) count too. */
export const flag = () => z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean());
