import { describe, expect, it } from 'vitest';
import { openAssistantDirectory } from '../../../src/assistant-directory.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { runCli } from '../../helpers/cli.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/** `service chat` follows the one slash-command rule (first character `/`) and records commands as activity. */
describe('service chat: slash-command detection and activity (spawned for real)', () => {
  it('-m " /help" goes to the assistant as typed; -m "/1abc" is an unknown command (exit 1)', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': minimalYaml() });
    const spaced = await runCli(['chat', '-d', dir, '-m', ' /help'], { env: standIn.env });
    expect(spaced).toMatchObject({ code: 0, stdout: 'ECHO:  /help\nTURN: 1\n' });
    const digit = await runCli(['chat', '-d', dir, '-m', '/1abc'], { env: standIn.env });
    expect(digit.code).toBe(1);
    expect(digit.stdout).toContain('Unknown command "/1abc"');
    expect(standIn.runs()).toHaveLength(1);
  });

  it('in the REPL (piped) a line keeps its leading space; every command is an activity event under "terminal"', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': minimalYaml() });
    const r = await runCli(['chat', '-d', dir], { env: { ...standIn.env, USER: 'tester-user' }, input: ' /status\n/status\n/1abc\n' });
    expect(r.stdout).toContain('ECHO:  /status\nTURN: 1\n');
    expect(r.stdout).toContain('test-bot on engine_b');
    expect(r.stdout).toContain('Unknown command "/1abc"');
    expect((standIn.runs() as Array<{ prompt: string }>).map((run) => run.prompt)).toEqual([' /status']);

    const opened = openAssistantDirectory({ dir, log: createSilentLogger() });
    try {
      const activity = (await opened.store.recentActivity(10)).reverse();
      expect(activity.map((a) => [a.source, a.sender, a.messagePreview, a.status])).toEqual([
        ['terminal', 'tester-user', '/status', 'completed'],
        ['terminal', 'tester-user', '/status', 'completed'],
        ['terminal', 'tester-user', '/1abc', 'failed'],
      ]);
      expect((await opened.store.metrics()).messagesBySource).toEqual({ terminal: 3 });
    } finally {
      opened.close();
    }
  });
});
