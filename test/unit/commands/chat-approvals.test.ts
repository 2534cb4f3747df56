import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AnswerRequest } from '../../../src/core/approvals/approvals.js';
import { createInlineApprovals, parseApprovalAnswer } from '../../../src/commands/chat-approvals.js';

describe('parseApprovalAnswer', () => {
  it('y / n / a and their words; an empty line is no (the default); anything else is no answer', () => {
    for (const l of ['y', 'Y', ' yes ', 'allow', '/allow']) expect(parseApprovalAnswer(l)).toBe('allow');
    for (const l of ['', '  ', 'n', 'No', 'deny', '/deny']) expect(parseApprovalAnswer(l)).toBe('deny');
    for (const l of ['a', 'always', 'allow always', '/allow  always']) expect(parseApprovalAnswer(l)).toBe('allow_always');
    for (const l of ['maybe', 'yy', 'ok', 'allow now', '/stop']) expect(parseApprovalAnswer(l)).toBeUndefined();
  });

  it('only a handful of words allow: no other line ever does', () => {
    const allowing = new Set(['y', 'yes', 'allow', 'a', 'always', 'allow always']);
    fc.assert(
      fc.property(fc.string(), (line) => {
        const d = parseApprovalAnswer(line);
        if (d === 'allow' || d === 'allow_always') {
          expect(allowing.has(line.trim().toLowerCase().replace(/^\//, '').replace(/\s+/g, ' '))).toBe(true);
        }
      }),
    );
  });
});

describe('createInlineApprovals', () => {
  const setup = () => {
    const answers: AnswerRequest[] = [];
    const asked: string[] = [];
    const said: string[] = [];
    const inline = createInlineApprovals({
      assistant: {
        answerApproval: (a) => {
          answers.push(a);
          return {
            ok: true,
            request: { id: a.id ?? '', tool: 'Bash', summary: '', detail: '', cut: false },
            decision: a.decision,
            text: `answered ${a.id} ${a.decision}`,
          };
        },
      },
      sessionKey: 'k',
      ask: (r) => asked.push(r.id),
      say: (t) => said.push(t),
    });
    return { inline, answers, asked, said };
  };
  const req = (id: string) => ({ id, tool: 'Bash', summary: `echo ${id}`, detail: `echo ${id}`, cut: false });

  it('answers the oldest first, as the owner, and asks for the next one only then', () => {
    const t = setup();
    expect(t.inline.offer('y')).toBe(false); // nothing waits: the line is a message
    t.inline.request(req('aaaaa'));
    t.inline.request(req('bbbbb'));
    expect(t.asked).toEqual(['aaaaa']);
    expect(t.inline.offer('a')).toBe(true);
    expect(t.asked).toEqual(['aaaaa', 'bbbbb']);
    expect(t.inline.offer('n')).toBe(true);
    expect(t.inline.waiting()).toBe(false);
    expect(t.answers).toEqual([
      { sessionKey: 'k', id: 'aaaaa', decision: 'allow_always', privileged: true },
      { sessionKey: 'k', id: 'bbbbb', decision: 'deny', privileged: true },
    ]);
  });

  it('a line that is no answer asks again; the end of input denies what waits and what comes later', () => {
    const t = setup();
    t.inline.request(req('ccccc'));
    expect(t.inline.offer('perhaps')).toBe(true);
    expect(t.answers).toEqual([]);
    expect(t.asked).toEqual(['ccccc', 'ccccc']);
    t.inline.endOfInput();
    t.inline.request(req('ddddd'));
    expect(t.answers.map((a) => [a.id, a.decision])).toEqual([
      ['ccccc', 'deny'],
      ['ddddd', 'deny'],
    ]);
  });

  it('the end of a turn drops its requests without answering (the registry denied them)', () => {
    const t = setup();
    t.inline.request(req('eeeee'));
    t.inline.turnEnded();
    expect(t.inline.waiting()).toBe(false);
    expect(t.inline.offer('y')).toBe(false);
    expect(t.answers).toEqual([]);
  });
});
