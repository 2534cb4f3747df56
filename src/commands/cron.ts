import { AppError } from '../core/errors.js';
import type { CommandIO } from './io.js';

/** Not available yet: the scheduler has not landed. */
export async function runCron(_opts: unknown, _io: CommandIO): Promise<number> {
  throw new AppError('not_available', 'service cron is not available yet: the scheduler has not landed in this build', { exitCode: 3 });
}
