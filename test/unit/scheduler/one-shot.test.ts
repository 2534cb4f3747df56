import { describe, expect, it } from 'vitest';
import type { TaskConfig } from '../../../src/core/config/schema.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { nextTaskTime, parseTaskTime } from '../../../src/core/scheduler/cron.js';
import { createScheduler } from '../../../src/core/scheduler/scheduler.js';
import { parseDuration } from '../../../src/core/scheduler/task-commands.js';
import { createFakeClock } from '../../fakes/fake-clock.mjs';

/** One-shot tasks (`at`: /remind, POST /api/tasks) in the scheduler, and the durations /remind reads. */
const once = (id: string, at: number): TaskConfig => ({ id, name: id, at: new Date(at).toISOString(), prompt: 'p', enabled: true });

function setup(tasks: TaskConfig[], start: number) {
  const clock = createFakeClock(start);
  const runs: Array<{ id: string; now: number; slot: number }> = [];
  let list = tasks;
  const scheduler = createScheduler({
    tasks: () => list,
    clock,
    run: async (t, slot) => void runs.push({ id: t.id, now: clock.now(), slot }),
    onSkipped: () => undefined,
    log: createSilentLogger(),
  });
  scheduler.start();
  return { clock, runs, scheduler, setTasks: (t: TaskConfig[]) => ((list = t), scheduler.refresh()) };
}

describe('one-shot tasks in the scheduler', () => {
  it('runs once at its time, told that time, and is not armed again', async () => {
    const start = Date.UTC(2030, 0, 1, 9, 0, 0);
    const t = setup([once('r', start + 5_000)], start);
    expect(t.scheduler.nextRun('r')?.getTime()).toBe(start + 5_000);
    await t.clock.advance(4_999);
    expect(t.runs).toEqual([]);
    await t.clock.advance(1);
    expect(t.runs).toEqual([{ id: 'r', now: start + 5_000, slot: start + 5_000 }]);
    await t.clock.advance(86_400_000);
    expect(t.runs).toHaveLength(1);
    expect(t.scheduler.nextRun('r')).toBeUndefined();
    expect(t.clock.pending()).toBe(0);
  });

  it('a time that passed while no gateway ran runs at once (late), with its own time as the slot; catch-up adds nothing', async () => {
    const start = Date.UTC(2030, 0, 1, 9, 0, 0);
    const t = setup([once('late', start - 60_000)], start);
    t.scheduler.catchUp(start - 120_000);
    await t.clock.advance(0);
    expect(t.runs).toEqual([{ id: 'late', now: start, slot: start - 60_000 }]);
  });

  it('a changed `at` re-arms; a removed one-shot is not run', async () => {
    const start = Date.UTC(2030, 0, 1, 9, 0, 0);
    const t = setup([once('r', start + 10_000), once('gone', start + 10_000)], start);
    t.setTasks([once('r', start + 20_000)]);
    await t.clock.advance(30_000);
    expect(t.runs).toEqual([{ id: 'r', now: start + 20_000, slot: start + 20_000 }]);
  });
});

describe('times and durations', () => {
  it.each([
    ['90s', 90_000],
    ['10m', 600_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['2H', 7_200_000],
  ])('/remind reads %s', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '5', 'm', '0s', '1w', '-5m', '5 m', '1.5h', 'soon'])('/remind refuses %j', (text) => expect(parseDuration(text)).toBeUndefined());

  it('reads ISO 8601 times only', () => {
    expect(parseTaskTime('2030-03-14T09:00:00Z')).toBe(Date.UTC(2030, 2, 14, 9));
    expect(parseTaskTime('2030-03-14T09:00:00+01:00')).toBe(Date.UTC(2030, 2, 14, 8));
    expect(parseTaskTime('2030-03-14 09:00')).toBe(new Date(2030, 2, 14, 9).getTime());
    for (const bad of ['tomorrow', '2030-03-14', '14/03/2030 09:00', '2030-13-40T99:00:00Z']) expect(parseTaskTime(bad), bad).toBeUndefined();
    expect(nextTaskTime({ at: '2030-03-14T09:00:00Z' }, new Date(Date.UTC(2031, 0, 1)))?.getTime()).toBe(Date.UTC(2030, 2, 14, 9));
  });
});
