import { describe, expect, it } from 'vitest';
import { type ApprovalRequest, createApprovals, type TurnApprovals } from '../../../src/core/approvals/approvals.js';
import { DETAIL_MAX, PROMPT_MAX } from '../../../src/core/approvals/summary.js';
import { mentionsControlFile } from '../../../src/core/guard/control-files.js';

/**
 * The decision routing of chat approvals: one registry per assistant, a handle per turn. What a
 * person may answer, and what the engine gets when nobody does (timeout, abort, turn end).
 */
function setup(opts: { timeoutMs?: number; secrets?: string[] } = {}) {
  const approvals = createApprovals({
    timeoutMs: () => opts.timeoutMs ?? 60_000,
    mask: (text) => (opts.secrets ?? []).reduce((t, s) => t.split(s).join('********'), text),
    touchesControlFiles: mentionsControlFile,
  });
  const shown: ApprovalRequest[] = [];
  const ctl = new AbortController();
  const open = (over: { sessionKey?: string; requester?: string; canAsk?: boolean; startedByAdmin?: boolean } = {}): TurnApprovals =>
    approvals.openTurn({
      sessionKey: over.sessionKey ?? 'tg:dm:1',
      ...(over.requester !== undefined ? { requester: over.requester } : { requester: 'tg:1' }),
      ...(over.startedByAdmin !== undefined ? { startedByAdmin: over.startedByAdmin } : {}),
      canAsk: over.canAsk ?? true,
      emit: (r) => shown.push(r),
      signal: ctl.signal,
    });
  return { approvals, shown, ctl, open };
}

const bash = (command: string) => ({ tool: 'Bash', input: { command, description: 'x' } });

describe('chat approvals: who answers and what the engine gets', () => {
  it('a request is shown with an id, the tool and a short summary; /allow by the requester allows it', async () => {
    const { approvals, shown, open } = setup();
    const verdict = open().ask(bash('echo hi > out.txt'));
    expect(shown).toEqual([
      { id: expect.stringMatching(/^[a-z0-9]{4,8}$/), tool: 'Bash', summary: 'echo hi > out.txt', detail: 'echo hi > out.txt', cut: false },
    ]);
    expect(approvals.waiting('tg:dm:1').map((r) => r.id)).toEqual([shown[0]!.id]);
    const answer = approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow', caller: 'tg:1', privileged: false });
    expect(answer).toMatchObject({ ok: true, decision: 'allow', request: shown[0] });
    expect(await verdict).toEqual({ allow: true, message: expect.any(String) });
    expect(approvals.waiting('tg:dm:1')).toEqual([]);
  });

  it('another person is refused and the request stays waiting; an admin (privileged) may answer', async () => {
    const { approvals, open } = setup();
    const verdict = open().ask(bash('rm -rf build'));
    const stranger = approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow', caller: 'tg:2', privileged: false });
    expect(stranger).toMatchObject({ ok: false, reason: 'not_allowed' });
    expect(stranger.text).toMatch(/only the person who started/i);
    expect(approvals.waiting('tg:dm:1')).toHaveLength(1);
    const admin = approvals.answer({ sessionKey: 'tg:dm:1', decision: 'deny', caller: 'tg:9', privileged: true });
    expect(admin).toMatchObject({ ok: true, decision: 'deny' });
    const v = await verdict;
    expect(v.allow).toBe(false);
    expect(v.message).toMatch(/denied/i);
  });

  it('a turn nobody in a chat started (HTTP, terminal): only a privileged caller may answer', async () => {
    const { approvals, open } = setup();
    const verdict = open({ requester: '' }).ask(bash('make'));
    expect(approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow', caller: 'tg:1', privileged: false })).toMatchObject({
      ok: false,
      reason: 'not_allowed',
    });
    expect(approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow', privileged: true })).toMatchObject({ ok: true });
    expect((await verdict).allow).toBe(true);
  });

  it('no answer within the timeout denies, and the request is no longer waiting', async () => {
    const { approvals, shown, open } = setup({ timeoutMs: 50 });
    const v = await open().ask(bash('sleep 1'));
    expect(v.allow).toBe(false);
    expect(v.message).toMatch(/no answer/i);
    expect(approvals.waiting('tg:dm:1')).toEqual([]);
    const late = approvals.answer({ sessionKey: 'tg:dm:1', id: shown[0]!.id, decision: 'allow', caller: 'tg:1', privileged: false });
    expect(late).toMatchObject({ ok: false, reason: 'unknown_id' });
  });

  it('an abort of the turn denies what is waiting; so does closing the turn; later asks are denied at once', async () => {
    const { approvals, ctl, open } = setup();
    const turn = open();
    const first = turn.ask(bash('one'));
    ctl.abort();
    expect(await first).toMatchObject({ allow: false, message: expect.stringMatching(/stopped/i) });
    expect(approvals.waiting('tg:dm:1')).toEqual([]);

    const other = setup();
    const t2 = other.open();
    const waiting = t2.ask(bash('two'));
    t2.close();
    expect((await waiting).allow).toBe(false);
    expect((await t2.ask(bash('three'))).allow).toBe(false);
    expect(other.shown).toHaveLength(1);
  });

  it("the asker's own signal (the helper went away) withdraws the request as denied", async () => {
    const { approvals, open } = setup();
    const gone = new AbortController();
    const v = open().ask({ ...bash('x'), signal: gone.signal });
    gone.abort();
    expect((await v).allow).toBe(false);
    expect(approvals.waiting('tg:dm:1')).toEqual([]);
  });

  it('a turn that cannot ask (a scheduled task) is denied at once, with nothing shown', async () => {
    const { shown, open } = setup();
    const v = await open({ canAsk: false }).ask(bash('x'));
    expect(v.allow).toBe(false);
    expect(v.message).toMatch(/no one/i);
    expect(shown).toEqual([]);
  });

  it('/allow always: the tool is allowed without asking for the rest of the session, until forget (reset)', async () => {
    const { approvals, shown, open } = setup();
    const turn = open();
    const first = turn.ask(bash('a'));
    expect(approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow_always', caller: 'tg:1', privileged: false })).toMatchObject({ ok: true });
    expect((await first).allow).toBe(true);
    expect((await open().ask(bash('b'))).allow).toBe(true);
    expect(shown).toHaveLength(1);
    // Another tool still asks; another session still asks.
    void open().ask({ tool: 'Write', input: { file_path: '/x' } });
    void open({ sessionKey: 'tg:dm:2', requester: 'tg:2' }).ask(bash('c'));
    expect(shown.map((s) => s.tool)).toEqual(['Bash', 'Write', 'Bash']);
    approvals.forget('tg:dm:1');
    void open().ask(bash('d'));
    expect(shown).toHaveLength(4);
  });

  it('several waiting: an answer without id is refused with the list; with an id it answers that one', async () => {
    const { approvals, shown, open } = setup();
    const turn = open();
    const a = turn.ask(bash('first'));
    const b = turn.ask({ tool: 'Write', input: { file_path: '/tmp/x.txt', content: 'secret stuff' } });
    const vague = approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow', caller: 'tg:1', privileged: false });
    expect(vague).toMatchObject({ ok: false, reason: 'ambiguous' });
    expect(vague.text).toContain(shown[0]!.id);
    expect(vague.text).toContain(shown[1]!.id);
    expect(approvals.answer({ sessionKey: 'tg:dm:1', id: shown[1]!.id.toUpperCase(), decision: 'deny', caller: 'tg:1', privileged: false })).toMatchObject({
      ok: true,
    });
    expect((await b).allow).toBe(false);
    expect(approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow', caller: 'tg:1', privileged: false })).toMatchObject({ ok: true });
    expect((await a).allow).toBe(true);
  });

  it('nothing waiting, an unknown id, and an id of another session are answered as such', () => {
    const { approvals, shown, open } = setup();
    expect(approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow', caller: 'tg:1', privileged: false })).toMatchObject({
      ok: false,
      reason: 'none_waiting',
    });
    void open({ sessionKey: 'tg:dm:2', requester: 'tg:2' }).ask(bash('x'));
    expect(approvals.answer({ sessionKey: 'tg:dm:1', id: shown[0]!.id, decision: 'allow', caller: 'tg:2', privileged: true })).toMatchObject({
      ok: false,
      reason: 'unknown_id',
    });
  });

  it('the summary is on one line with control characters as escapes, cut at PROMPT_MAX, and secret values are masked', () => {
    const { shown, open } = setup({ secrets: ['sk-live-123'] });
    void open().ask(bash(`curl -H "Authorization: sk-live-123" https://x\n\u001b[31mred\u001b[0m ${'y'.repeat(600)}`));
    void open().ask({ tool: 'Edit', input: { file_path: '/repo/src/a.ts', old_string: 'a', new_string: 'b' } });
    void open().ask({ tool: 'mcp__docs__search', input: { query: 'how', limit: 3 } });
    const [cmd, edit, other] = shown;
    expect(cmd!.summary).not.toContain('sk-live-123');
    expect(cmd!.detail).not.toContain('sk-live-123');
    expect(cmd!.summary).toContain('********');
    expect(cmd!.detail).not.toMatch(/[\u0000-\u001f\u007f]/);
    expect(cmd!.detail).toContain('https://x\\n\\u{001B}[31mred\\u{001B}[0m');
    expect(cmd!.summary.length).toBeLessThanOrEqual(PROMPT_MAX);
    expect(cmd!.summary.endsWith('…')).toBe(true);
    expect(cmd!.cut).toBe(true);
    expect(cmd!.detail.endsWith('y'.repeat(600))).toBe(true);
    expect(edit!.summary).toBe('/repo/src/a.ts');
    expect(other!.summary).toBe('{"query":"how","limit":3}');
  });

  it('a tool call too long to review in a chat is denied unseen', async () => {
    const { shown, open } = setup();
    const v = await open().ask(bash(`echo ${'x'.repeat(DETAIL_MAX)}`));
    expect(v.allow).toBe(false);
    expect(v.message).toMatch(/too long for a person to review/);
    expect(shown).toEqual([]);
  });

  it("in a group, a member's /allow always holds for their own turns; an admin's for everyone in the session", async () => {
    const { approvals, shown, open } = setup();
    const group = 'tg:group:7';
    const ada = () => open({ sessionKey: group, requester: 'tg:ada' });
    const bob = () => open({ sessionKey: group, requester: 'tg:bob' });
    const first = ada().ask(bash('a'));
    const given = approvals.answer({ sessionKey: group, decision: 'allow_always', caller: 'tg:ada', privileged: false });
    expect(given).toMatchObject({ ok: true });
    expect(given.text).toMatch(/for your own turns/);
    expect((await first).allow).toBe(true);
    // Ada's next Bash runs unasked; Bob's is still asked.
    expect((await ada().ask(bash('b'))).allow).toBe(true);
    const bobs = bob().ask(bash('c'));
    expect(shown).toHaveLength(2);
    // An admin's "always" on Bob's request holds for everyone in the group from then on.
    const admin = approvals.answer({ sessionKey: group, decision: 'allow_always', caller: 'tg:root', privileged: true });
    expect(admin.text).toMatch(/for everyone in this session/);
    expect((await bobs).allow).toBe(true);
    expect((await open({ sessionKey: group, requester: 'tg:carol' }).ask(bash('d'))).allow).toBe(true);
    expect(shown).toHaveLength(2);
  });

  it("a call on the assistant's own files in a member's turn: only an admin may allow it, the member may deny; never covered by /allow always", async () => {
    const { approvals, shown, open } = setup();
    const member = () => open({ startedByAdmin: false });
    const always = member().ask(bash('ls'));
    approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow_always', caller: 'tg:1', privileged: false });
    expect((await always).allow).toBe(true);
    const edit = member().ask(bash(`sed -i 's/admins: \\[\\]/admins: [tg:1]/' service.yaml`));
    expect(shown.at(-1)).toMatchObject({ adminOnly: true });
    const refused = approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow', caller: 'tg:1', privileged: false });
    expect(refused).toMatchObject({ ok: false, reason: 'not_allowed', text: expect.stringMatching(/only an admin can allow it/) });
    expect(approvals.answer({ sessionKey: 'tg:dm:1', decision: 'allow', caller: 'tg:9', privileged: true })).toMatchObject({ ok: true });
    expect((await edit).allow).toBe(true);
    const token = member().ask({ tool: 'Read', input: { file_path: '/srv/bot/.service/gateway-token' } });
    expect(approvals.answer({ sessionKey: 'tg:dm:1', decision: 'deny', caller: 'tg:1', privileged: false })).toMatchObject({ ok: true });
    expect((await token).allow).toBe(false);
    // An admin's own turn: an ordinary request.
    void open({ startedByAdmin: true }).ask({ tool: 'Edit', input: { file_path: 'service.yaml' } });
    expect(shown.at(-1)?.adminOnly).toBeUndefined();
  });

  it("what counts as naming the assistant's own files", () => {
    for (const t of ['service.yaml', 'cat ./.env', 'cp x /srv/bot/.service/state.db', 'echo x > .service/gateway-token', 'vi service.yml']) {
      expect(mentionsControlFile(t), t).toBe(true);
    }
    for (const t of ['node -e "process.env.HOME"', 'systemctl restart nginx.service', 'cat README.md', 'ls services/']) {
      expect(mentionsControlFile(t), t).toBe(false);
    }
  });
});
