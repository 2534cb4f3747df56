import fs from 'node:fs';
import path from 'node:path';
import type { LineParser } from '../../src/core/engines/runner.js';
import type { AgentEvent } from '../../src/core/events.js';
import { until } from './wait.js';

/**
 * Recorded stdio conversations with a real agent (ACP, `codex app-server`: written by the capture
 * scripts in test/fixtures through our own clients), and their replay through a fresh client.
 */
export interface TranscriptLine {
  /** `client`: what our client sent; anything else: what the agent sent. */
  from: string;
  msg: Record<string, unknown>;
}

/** `<dir>/<name>.ndjson` (the lines) and `<dir>/<name>.meta.json` (the turn, the expected events…). */
export function readTranscript<Meta>(dir: string, name: string): { lines: TranscriptLine[]; meta: Meta } {
  const base = path.join(dir, name);
  const lines = fs
    .readFileSync(`${base}.ndjson`, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as TranscriptLine);
  return { lines, meta: JSON.parse(fs.readFileSync(`${base}.meta.json`, 'utf8')) as Meta };
}

/**
 * Feed the agent's lines to `client`; before each, wait until the client sent what it had sent
 * at that point in the recording. `cancelMethod`: the message an abort makes the client send
 * (the abort of the recording is replayed where that message first appears).
 */
export async function replayTranscript(
  client: LineParser,
  lines: readonly TranscriptLine[],
  cancelMethod: string,
): Promise<{ events: AgentEvent[]; sent: Array<Record<string, unknown>>; recordedSent: Array<Record<string, unknown>>; ended: boolean }> {
  const sent: Array<Record<string, unknown>> = [];
  let ended = false;
  client.conversation?.open({ send: (l) => sent.push(JSON.parse(l)), end: () => (ended = true) });
  const events: AgentEvent[] = [];
  let expected = 0;
  for (const line of lines) {
    if (line.from === 'client') {
      expected++;
      if (line.msg.method === cancelMethod && sent.length < expected) client.conversation?.cancel?.();
      await until(() => sent.length >= expected, 10_000, `client message ${expected} (${String(line.msg.method ?? 'answer')})`, 1);
      continue;
    }
    events.push(...client.parseLine(JSON.stringify(line.msg)));
  }
  if (!ended) events.push(...client.finish({ code: null, signal: 'SIGTERM', stderrTail: '' }));
  return { events, sent, recordedSent: lines.filter((l) => l.from === 'client').map((l) => l.msg), ended };
}

/**
 * `parser`, with every line it reads (as `from: peer`) and every message it writes (as
 * `from: 'client'`) pushed onto `lines`: what the capture scripts record a real conversation with.
 */
export function recordConversation(parser: LineParser, lines: Array<{ from: string; msg: unknown }>, peer: string): LineParser {
  const conversation = parser.conversation;
  return {
    parseLine(line) {
      try {
        lines.push({ from: peer, msg: JSON.parse(line) });
      } catch {
        lines.push({ from: peer, msg: line });
      }
      return parser.parseLine(line);
    },
    finish: (exit) => parser.finish(exit),
    ...(conversation
      ? {
          conversation: {
            open: (channel) =>
              conversation.open({
                send(line) {
                  lines.push({ from: 'client', msg: JSON.parse(line) });
                  channel.send(line);
                },
                end: () => channel.end(),
              }),
            ...(conversation.cancel ? { cancel: () => conversation.cancel?.() } : {}),
          },
        }
      : {}),
  };
}
