import { AppError } from '../core/errors.js';
import type { CommandIO } from './io.js';

/** Not available yet: the chat core has not landed. */
export async function runChat(_opts: unknown, _io: CommandIO): Promise<number> {
  throw new AppError('not_available', 'service chat is not available yet: the chat core has not landed in this build', { exitCode: 3 });
}
