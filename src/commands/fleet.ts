import { AppError } from '../core/errors.js';
import type { CommandIO } from './io.js';

/** Not available yet: the fleet registry has not landed. */
export async function runFleetList(_opts: unknown, _io: CommandIO): Promise<number> {
  throw new AppError('not_available', 'service fleet is not available yet: the fleet registry has not landed in this build', { exitCode: 3 });
}
