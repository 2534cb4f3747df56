import chalk, { Chalk } from 'chalk';
import type { Ora } from 'ora';
import type { CommandResult } from '../core/commands/command-table.js';
import { showInvisible } from '../core/approvals/summary.js';
import type { StreamEvent } from '../core/events.js';
import type { CommandIO } from './io.js';

/**
 * Stream events → terminal. Text is written as it arrives; tool calls are dimmed; a spinner runs
 * until the first output. Without a terminal there is no colour and no spinner (nor on one
 * narrower than MIN_SPINNER_COLUMNS); with --json every event is one NDJSON line.
 */
export interface ChatRenderer {
  startTurn(): Promise<void>;
  event(e: StreamEvent): void;
  command(result: CommandResult): void;
  note(text: string): void;
}

/**
 * Narrower than this, no spinner. ora redraws by counting the lines its frame takes, dividing by
 * the width: on a terminal that reports 0 columns (some serial consoles and embedded terminals)
 * the count is infinite and each redraw floods the terminal with cursor moves, blocking the reply.
 */
const MIN_SPINNER_COLUMNS = 20;

export function createChatRenderer(io: CommandIO, opts: { json: boolean; tty: boolean }): ChatRenderer {
  const c = opts.tty ? chalk : new Chalk({ level: 0 });
  let spinner: Ora | undefined;
  let atLineStart = true;

  const stopSpinner = () => {
    spinner?.stop();
    spinner = undefined;
  };
  const write = (text: string) => {
    if (text === '') return;
    stopSpinner();
    io.write(text);
    atLineStart = text.endsWith('\n');
  };
  const line = (text: string) => write(`${atLineStart ? '' : '\n'}${text}\n`);

  return {
    async startTurn() {
      atLineStart = true;
      // ora draws on stderr; a stream that is no terminal has no width, and ora then draws nothing.
      const stream = process.stderr;
      if (opts.json || !opts.tty || (stream.columns ?? MIN_SPINNER_COLUMNS) < MIN_SPINNER_COLUMNS) return;
      const { default: ora } = await import('ora');
      spinner = ora({ text: c.dim('thinking…'), stream, discardStdin: false }).start();
    },
    event(e) {
      if (opts.json) {
        io.out(JSON.stringify(e));
        return;
      }
      switch (e.type) {
        case 'text':
          write(e.content);
          break;
        case 'approval_request':
          // The whole text: a terminal has no message limit (core escaped what would not show).
          line(c.yellow(`Approval needed: ${showInvisible(e.tool)}: ${e.detail}`));
          break;
        case 'tool_call':
          line(c.dim(`→ ${e.name} ${truncate(e.args, 120)}`));
          break;
        case 'tool_result':
          line(c.dim(`← ${truncate(e.content.split('\n')[0] ?? '', 100)}${e.content.includes('\n') ? ' …' : ''}`));
          break;
        case 'error':
          line(c.red(`error: ${e.message}`));
          break;
        case 'done':
          stopSpinner();
          break;
        case 'completion':
          stopSpinner();
          if (e.status === 'silent') line(c.dim('(no reply: the assistant chose to stay silent)'));
          else if (e.status === 'aborted') line(c.yellow('(stopped)'));
          else if (!atLineStart) write('\n');
          if (opts.tty && e.durationMs !== undefined) io.out(c.dim(`(${(e.durationMs / 1000).toFixed(1)} s)`));
          break;
      }
    },
    command(result) {
      if (opts.json) io.out(JSON.stringify(result));
      else line(result.text);
    },
    note(text) {
      if (opts.json) return;
      line(c.dim(text));
    },
  };
}

function truncate(s: string, n: number): string {
  const flat = s.replace(/\s+/g, ' ');
  return flat.length > n ? `${flat.slice(0, n - 1)}…` : flat;
}
