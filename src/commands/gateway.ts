import { AppError } from '../core/errors.js';
import type { CommandIO } from './io.js';

/** Not available yet: the HTTP gateway has not landed. */
export async function runGateway(_opts: unknown, _io: CommandIO): Promise<number> {
  throw new AppError('not_available', 'service gateway is not available yet: the HTTP gateway has not landed in this build', { exitCode: 3 });
}
