/**
 * A command run on a real terminal: a detached tmux session on a private tmux server, so prompts
 * and REPLs see a TTY and tests read the screen the way a user would.
 */
import { execFileSync } from 'node:child_process';
import { HANG_MS, poll } from './wait.js';

export interface Terminal {
  /** tmux key names or literal text, as `tmux send-keys` takes them. */
  keys(...keys: string[]): void;
  /** The visible screen and the scrollback kept for the session. */
  screen(): string;
  /** Waits up to 15 s for the screen to contain `text` (or satisfy `pred`); fails showing the screen. */
  waitFor(expected: string | ((screen: string) => boolean), what?: string): Promise<string>;
  /** Ends the tmux server with everything in it. */
  close(): void;
}

/** `command` runs in a shell; its exit status is printed as EXITED-<code> and the pane stays for reading. */
export function startTerminal(command: string, size = { width: 160, height: 40 }): Terminal {
  const socket = `service-test-${process.pid}-${Date.now()}`;
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  const screen = () => tmux('capture-pane', '-p', '-t', 'term', '-S', '-200');
  tmux('new-session', '-d', '-s', 'term', '-x', String(size.width), '-y', String(size.height), `${command}; echo EXITED-$?; sleep 30`);
  return {
    keys: (...keys) => void tmux('send-keys', '-t', 'term', ...keys),
    screen,
    waitFor: (expected, what) => {
      const matches = typeof expected === 'string' ? (s: string) => s.includes(expected) : expected;
      const label = what ?? (typeof expected === 'string' ? `"${expected}"` : 'the expected screen');
      return poll(
        () => {
          const s = screen();
          return matches(s) ? s : undefined;
        },
        // Only a hang: a loaded machine can take seconds to start node and draw a prompt.
        HANG_MS,
        label,
        100,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; screen:\n${screen()}`);
      });
    },
    close: () => {
      try {
        tmux('kill-server');
      } catch {
        // gone already
      }
    },
  };
}
