import { randomInt } from 'node:crypto';

/**
 * Pairing codes: 8 characters a person can read out of a chat message and type into a terminal
 * without guessing. Upper-case letters and digits without the lookalikes 0/O, 1/I/L (and U, read
 * as V): 30 symbols, about 6.5 × 10^11 codes, drawn with a CSPRNG.
 */
export const PAIRING_ALPHABET = 'ABCDEFGHJKMNPQRSTVWXYZ23456789';
export const PAIRING_CODE_LENGTH = 8;
/** A code is valid this long. */
export const PAIRING_TTL_MS = 3_600_000;
/** Live codes per channel; past it, unknown senders are told to try again later. */
export const MAX_PENDING_PER_CHANNEL = 3;
/**
 * Live codes one person may have asked for on a channel (for themselves in a direct chat, or for
 * a group they mentioned the bot in): fewer than the channel's, so one account cannot take every
 * slot; the next request waits until the owner answered (or the hour ran out).
 */
export const MAX_PENDING_PER_REQUESTER = 1;

/** `random(n)` returns an integer in [0, n); injectable for tests. */
export function generatePairingCode(random: (n: number) => number = randomInt): string {
  let code = '';
  for (let i = 0; i < PAIRING_CODE_LENGTH; i++) code += PAIRING_ALPHABET[random(PAIRING_ALPHABET.length)];
  return code;
}

/** What a person typed (any case, spaces or dashes between groups) → the code, or undefined when it cannot be one. */
export function parsePairingCode(input: string): string | undefined {
  const code = input.replace(/[\s-]/g, '').toUpperCase();
  if (code.length !== PAIRING_CODE_LENGTH) return undefined;
  return [...code].every((ch) => PAIRING_ALPHABET.includes(ch)) ? code : undefined;
}
