import type { Assistant } from '../assistant/assistant.js';
import type { ChannelHub } from '../channel-hub.js';
import type { TaskConfig } from '../config/schema.js';
import type { ConfigSource } from '../config/source.js';
import type { Completion, StreamEvent } from '../events.js';
import type { Logger } from '../logger.js';
import type { TaskRun, TaskRunStore } from '../store/types.js';

/**
 * One run of a scheduled task: the task's prompt through the chat core on a session of its own
 * (removed afterwards, so every run starts fresh and nothing grows), the reply delivered to the
 * task's target through the channel's proactive send, the run recorded. Failed runs (engine
 * error, timeout, empty reply) and silent ones (`[PASS]`) send nothing.
 */
export interface TaskRunnerDeps {
  assistant: Assistant;
  config: ConfigSource;
  store: TaskRunStore;
  log: Logger;
  /** The channels to deliver to (the gateway's, or one connected just for `service cron run`); none in `service chat`. */
  channels?: ChannelHub;
  now?: () => number;
}

export interface TaskOutcome {
  run: TaskRun;
  completion: Completion | undefined;
  /** The reply text (empty for failed and silent runs). */
  reply: string;
}

export interface TaskRunOptions {
  /** Sees every event of the run's turn as it happens (POST /api/tasks/:id/run streams them). */
  onEvent?: (event: StreamEvent) => void;
}

export interface TaskRunner {
  run(task: TaskConfig, opts?: TaskRunOptions): Promise<TaskOutcome>;
  recordSkipped(task: TaskConfig, at: number): Promise<void>;
  /** The last runs of a task, newest first. */
  history(id: string, limit: number): Promise<TaskRun[]>;
}

const PREVIEW = 200;

export function createTaskRunner(deps: TaskRunnerDeps): TaskRunner {
  const now = deps.now ?? Date.now;
  const log = deps.log.child('tasks');

  const run = async (task: TaskConfig, opts: TaskRunOptions = {}): Promise<TaskOutcome> => {
    const startedAt = now();
    const key = `task:${task.id}:${startedAt}`;
    let completion: Completion | undefined;
    let costUsd = 0;
    try {
      for await (const e of deps.assistant.chat(task.prompt, {
        sessionKey: key,
        source: 'cron',
        sender: `task ${task.id}`,
        waitForCapacity: true,
        askApprovals: false,
      })) {
        opts.onEvent?.(e);
        if (e.type === 'done' && e.costUsd !== undefined) costUsd = e.costUsd;
        if (e.type === 'completion') completion = e;
      }
    } finally {
      await deps.assistant.reset(key);
    }
    const status = completion?.status ?? 'failed';
    const reply = status === 'completed' ? (completion?.finalText ?? '') : '';
    const record: TaskRun = {
      taskId: task.id,
      startedAt,
      endedAt: now(),
      status,
      durationMs: completion?.durationMs ?? now() - startedAt,
      costUsd,
      preview: preview(status === 'silent' ? '[PASS]' : reply),
      ...(status === 'failed' || status === 'aborted' ? { error: completion?.message ?? status } : {}),
    };
    if (status === 'completed' && task.target) {
      const sent = deps.channels
        ? await deps.channels.send(task.target.channel, task.target.chatId, reply)
        : { ok: false as const, error: 'no channels are connected in this process' };
      record.delivered = sent.ok && sent.queued === undefined;
      if (!sent.ok) record.error = `delivery to ${task.target.channel} failed: ${sent.error}`;
      else if (sent.queued !== undefined) record.error = `not delivered yet: ${sent.queued}; it waits in the reply outbox and is sent again`;
    }
    await deps.store.recordTaskRun(record);
    log.info(`task ${task.id}: ${status}${record.error ? ` (${record.error})` : ''}`, { task: task.id, status });
    return { run: record, completion, reply };
  };

  return {
    run,
    recordSkipped(task, at) {
      return deps.store.recordTaskRun({
        taskId: task.id,
        startedAt: at,
        endedAt: at,
        status: 'skipped',
        durationMs: 0,
        costUsd: 0,
        preview: '',
        error: 'the previous run was still going',
      });
    },
    history: (id, limit) => deps.store.taskRuns(id, limit),
  };
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > PREVIEW ? `${flat.slice(0, PREVIEW - 1)}…` : flat;
}
