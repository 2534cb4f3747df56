import { AppError } from '../../core/errors.js';
import type { ChannelAdapter, ChannelDeps } from '../types.js';

/** The adapter has not landed in this build yet. */
export async function createDingtalkAdapter(_opts: Record<string, unknown>, deps: ChannelDeps): Promise<ChannelAdapter> {
  throw new AppError('channel_unavailable', `${deps.name}: this build has no adapter for it yet`);
}
