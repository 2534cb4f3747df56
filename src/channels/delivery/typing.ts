import type { ReplyAdapter } from '../reply-adapter.js';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { Clock } from '../../core/scheduler/clock.js';
import type { ReplyTarget } from '../types.js';

/** How long a platform's "typing…" shows when the adapter does not say (most show it about 5 s). */
const DEFAULT_TYPING_LASTS_MS = 5_000;

/**
 * "typing…" for the whole turn: at once (WeCom treats it as the acknowledgement), then again
 * before the platform's indicator lapses (Telegram's lasts 5 s, Discord's 10 s: `typingLastsMs`),
 * until stop().
 */
export function keepTyping(adapter: ReplyAdapter, to: ReplyTarget, log: Logger, clock: Clock): { stop(): void } {
  if (!adapter.typing) return { stop: () => undefined };
  const every = Math.max(1_000, Math.round((adapter.typingLastsMs ?? DEFAULT_TYPING_LASTS_MS) * 0.8));
  let timer: { clear(): void } | undefined;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    void adapter.typing?.(to).catch((err: unknown) => log.debug(`${adapter.name}: typing failed: ${errorMessage(err)}`));
    timer = clock.setTimer(tick, every);
  };
  tick();
  return {
    stop: () => {
      stopped = true;
      timer?.clear();
    },
  };
}
