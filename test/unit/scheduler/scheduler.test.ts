import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS } from '../../../src/core/util/clock.js';
import { nextCronTime } from '../../../src/core/scheduler/cron.js';
import { createScheduler } from '../../../src/core/scheduler/scheduler.js';
import type { TaskConfig } from '../../../src/core/config/schema.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { createFakeClock } from '../../fakes/fake-clock.mjs';

const local = (y: number, mo: number, d: number, h = 0, mi = 0, sec = 0) => new Date(y, mo - 1, d, h, mi, sec).getTime();
const task = (id: string, schedule: string, over: Partial<TaskConfig> = {}): TaskConfig => ({ id, name: id, schedule, prompt: 'p', enabled: true, ...over });

describe('cron semantics (cron-parser, the machine time zone)', () => {
  it.each([
    ['*/15 * * * *', local(2026, 3, 10, 9, 7), local(2026, 3, 10, 9, 15)],
    ['0 9 * * 1-5', local(2026, 3, 13, 10, 0), local(2026, 3, 16, 9, 0)], // Friday after 9 → Monday
    ['0 0 * * 7', local(2026, 3, 10), local(2026, 3, 15)], // 7 is Sunday
    ['0 0 * * 0', local(2026, 3, 10), local(2026, 3, 15)], // and so is 0
    ['0 0 13 * 5', local(2026, 3, 1), local(2026, 3, 6)], // DOM and DOW restricted: OR, so Friday the 6th comes first
    ['0 0 13 * 5', local(2026, 3, 7), local(2026, 3, 13)], // ... then the 13th (a Friday here anyway)
    ['0 0 1 1 *', local(2026, 3, 1), local(2027, 1, 1)],
  ])('%s after %s', (expr, from, expected) => {
    expect(nextCronTime(expr, new Date(from)).getTime()).toBe(expected);
  });
});

describe('scheduler (injected clock)', () => {
  const setup = (tasks: TaskConfig[], start: number, runMs = 0) => {
    const clock = createFakeClock(start);
    const runs: Array<{ id: string; at: number }> = [];
    const skipped: Array<{ id: string; at: number }> = [];
    const slots: number[] = [];
    let list = tasks;
    const scheduler = createScheduler({
      tasks: () => list,
      clock,
      run: async (t, slot) => {
        runs.push({ id: t.id, at: clock.now() });
        slots.push(slot);
        if (runMs > 0) await new Promise<void>((resolve) => clock.setTimer(resolve, runMs));
      },
      onSkipped: (t, at) => skipped.push({ id: t.id, at }),
      log: createSilentLogger(),
    });
    scheduler.start();
    return { clock, runs, skipped, slots, scheduler, setTasks: (t: TaskConfig[]) => ((list = t), scheduler.refresh()) };
  };

  it('fires at each cron time and computes the next from there', async () => {
    const t = setup([task('q', '*/15 * * * *')], local(2026, 3, 10, 9, 1));
    expect(t.scheduler.nextRun('q')?.getTime()).toBe(local(2026, 3, 10, 9, 15));
    await t.clock.advance(60 * 60_000);
    expect(t.runs.map((r) => r.at)).toEqual([local(2026, 3, 10, 9, 15), local(2026, 3, 10, 9, 30), local(2026, 3, 10, 9, 45), local(2026, 3, 10, 10, 0)]);
  });

  it('tells each run the cron time it is for, also when its timer fires late', async () => {
    const t = setup([task('q', '*/15 * * * *')], local(2026, 3, 10, 9, 1));
    await t.clock.advance(14 * 60_000);
    expect(t.slots).toEqual([local(2026, 3, 10, 9, 15)]);
  });

  it('fires nothing before start, nothing after stop, and re-arms from the time it starts again', async () => {
    const clock = createFakeClock(local(2026, 3, 10, 9, 0));
    const runs: number[] = [];
    const scheduler = createScheduler({
      tasks: () => [task('m', '* * * * *')],
      clock,
      run: async (_t, at) => void runs.push(at),
      onSkipped: () => undefined,
      log: createSilentLogger(),
    });
    scheduler.refresh(); // a config change on a gateway that follows another: still unarmed
    await clock.advance(2 * 60_000);
    expect(runs).toEqual([]);
    scheduler.start();
    await clock.advance(60_000);
    scheduler.stop();
    await clock.advance(3 * 60_000);
    expect(runs).toEqual([local(2026, 3, 10, 9, 3)]);
    scheduler.start(); // leader again: the times it was not leader are not replayed
    await clock.advance(60_000);
    expect(runs).toEqual([local(2026, 3, 10, 9, 3), local(2026, 3, 10, 9, 7)]);
  });

  it('catches up once the last time of each task since a takeover began, and nothing when there was none', async () => {
    const t = setup([task('m', '* * * * *'), task('h', '0 * * * *')], local(2026, 3, 10, 9, 2, 30));
    t.scheduler.catchUp(local(2026, 3, 10, 8, 59, 50)); // gap covers 9:00, 9:01, 9:02 (m) and 9:00 (h)
    expect(t.slots.sort()).toEqual([local(2026, 3, 10, 9, 0), local(2026, 3, 10, 9, 2)].sort());
    await t.clock.advance(1); // (the runs end)
    t.scheduler.catchUp(local(2026, 3, 10, 9, 2, 10)); // nothing due since then
    expect(t.slots).toHaveLength(2);
  });

  it('a wait longer than the timer limit (40 days) is chained and does not fire early', async () => {
    const start = local(2026, 1, 1, 12);
    const t = setup([task('later', '0 0 11 2 *')], start); // 11 February, ~40 days away
    const target = local(2026, 2, 11);
    expect(target - start).toBeGreaterThan(MAX_TIMER_MS);
    expect(t.clock.delays[0]).toBe(MAX_TIMER_MS);
    await t.clock.advance(target - start - 1);
    expect(t.runs).toEqual([]);
    await t.clock.advance(1);
    expect(t.runs).toEqual([{ id: 'later', at: target }]);
  });

  it('a run still going at its next time is skipped and recorded as skipped', async () => {
    const t = setup([task('slow', '* * * * *')], local(2026, 3, 10, 9, 0), 90_000);
    await t.clock.advance(3 * 60_000 + 1);
    expect(t.runs.map((r) => r.at)).toEqual([local(2026, 3, 10, 9, 1), local(2026, 3, 10, 9, 3)]);
    expect(t.skipped).toEqual([{ id: 'slow', at: local(2026, 3, 10, 9, 2) }]);
  });

  it('picks up tasks added, disabled and re-scheduled by a config change', async () => {
    const t = setup([], local(2026, 3, 10, 9, 0));
    expect(t.scheduler.nextRun('new')).toBeUndefined();
    t.setTasks([task('new', '30 9 * * *')]);
    expect(t.scheduler.nextRun('new')?.getTime()).toBe(local(2026, 3, 10, 9, 30));
    t.setTasks([task('new', '45 9 * * *')]);
    t.setTasks([task('new', '45 9 * * *'), task('off', '* * * * *', { enabled: false })]);
    await t.clock.advance(60 * 60_000);
    expect(t.runs).toEqual([{ id: 'new', at: local(2026, 3, 10, 9, 45) }]);
    t.setTasks([task('new', '45 9 * * *', { enabled: false })]);
    expect(t.scheduler.nextRun('new')).toBeUndefined();
    expect(t.clock.pending()).toBe(0);
  });

  it('arms hundreds of new tasks a slice at a time, other events running in between; all are armed, none removed since', async () => {
    const many = (n: number, from = 0) => Array.from({ length: n }, (_, i) => task(`t${from + i}`, `${(from + i) % 60} 10 * * *`));
    const t = setup([], local(2026, 3, 10, 9, 0));
    t.setTasks(many(250));
    const armed = () => many(250).filter((x) => t.scheduler.nextRun(x.id) !== undefined).length;
    expect(armed()).toBe(10); // one slice (ARM_SLICE)
    let otherEvent = false;
    setImmediate(() => (otherEvent = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(otherEvent).toBe(true);
    expect(armed()).toBeLessThan(250);
    await expect.poll(armed).toBe(250);
    expect(t.scheduler.nextRun('t249')?.getTime()).toBe(local(2026, 3, 10, 10, 9));
    // A change while slices are pending: the tasks it removed are never armed.
    t.setTasks(many(150));
    t.setTasks(many(300, 1000).concat(many(10)));
    t.setTasks(many(10));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(many(300, 1000).some((x) => t.scheduler.nextRun(x.id) !== undefined)).toBe(false);
    expect(t.clock.pending()).toBe(10);
  });

  it('a takeover catch-up arms the tasks still waiting for their slice first', async () => {
    const t = setup(
      Array.from({ length: 150 }, (_, i) => task(`m${i}`, '* * * * *')),
      local(2026, 3, 10, 9, 2, 30),
    );
    t.scheduler.catchUp(local(2026, 3, 10, 9, 1, 50)); // the gap covers 9:02 for every task
    expect(t.slots).toHaveLength(150);
  });

  it('does not replay times that passed while it was not running', async () => {
    // A gateway started at 09:50 runs the 09:15 … 09:45 slots never; the first run is 10:00.
    const t = setup([task('q', '*/15 * * * *')], local(2026, 3, 10, 9, 50));
    await t.clock.advance(11 * 60_000);
    expect(t.runs.map((r) => r.at)).toEqual([local(2026, 3, 10, 10, 0)]);
  });
});
