import fs from 'node:fs';
import path from 'node:path';
import type { StreamEvent } from '../../src/core/events.js';
import { createSilentLogger } from '../../src/core/logger.js';
import { addTaskRunner, type AssistantDirectory, openAssistantDirectory } from '../../src/assistant-directory.js';
import type { TaskRunner } from '../../src/core/scheduler/task-runner.js';
import { createStandIn, type StandIn } from './stand-in.js';
import { testdir } from './testdir.js';

export interface TestAssistant extends AssistantDirectory {
  standIn: StandIn;
  /** The task runner `/cron` uses (no scheduler). */
  tasks: TaskRunner;
}

export interface TestAssistantOptions {
  engine?: string;
  yaml?: string;
  files?: Record<string, string>;
}

/** An assistant directory on a stand-in engine, opened in this process. */
export function createTestAssistant(opts: TestAssistantOptions = {}): TestAssistant {
  const { dir, standIn } = writeTestAssistant(opts);
  const opened = openAssistantDirectory({ dir, log: createSilentLogger(), env: { ...process.env, ...standIn.env } });
  const tasks = addTaskRunner(opened).runner;
  return { ...opened, standIn, tasks };
}

/** The files of a test assistant (service.yaml named `tester`, on a stand-in engine), not opened. */
export function writeTestAssistant(opts: TestAssistantOptions = {}): { dir: string; standIn: StandIn } {
  const standIn = createStandIn();
  const engine = opts.engine ?? 'engine_b';
  // The assistant directory sits alone in a parent of its own, so tests can watch both for stray writes.
  const dir = path.join(testdir(), 'assistant');
  writeFiles(dir, {
    'service.yaml': `name: tester\nengine: ${engine}\n${engine === 'engine_c' ? 'model: fake/m\n' : ''}${engine === 'acp' ? 'acp:\n  command: acp-agent\n' : ''}${opts.yaml ?? ''}`,
    ...opts.files,
  });
  return { dir, standIn };
}

export async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const e of stream) events.push(e);
  return events;
}

export const completionOf = (events: StreamEvent[]) => {
  const last = events.at(-1);
  if (last?.type !== 'completion') throw new Error(`stream did not end with completion: ${JSON.stringify(events.map((e) => e.type))}`);
  return last;
};

/** The stream ends with done then exactly one completion. */
export function assertEnding(events: StreamEvent[]): void {
  const types = events.map((e) => e.type);
  if (types.filter((t) => t === 'completion').length !== 1 || types.at(-1) !== 'completion' || types.at(-2) !== 'done') {
    throw new Error(`bad ending: ${types.join(',')}`);
  }
}

export const imagesDirOf = (dir: string) => path.join(dir, '.service', 'images');

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(dir, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
}
