import { describe, expect, it } from 'vitest';
import { formatApprovalPrompt } from '../../../src/channels/approval-prompt.js';
import { formatWholeRequest } from '../../../src/core/approvals/approval-commands.js';
import { describeToolCall, PROMPT_MAX, showInvisible } from '../../../src/core/approvals/summary.js';
import { LONG_TAIL, NEWLINE, ZERO_WIDTH } from '../../helpers/hidden-commands.js';

/**
 * What a person approves shows what runs (issue 29, Medium 2): the three commands that once hid
 * their harmful part from the approval prompt, through the one formatting every surface uses.
 */
const same = (text: string) => text;
const describe_ = (command: string) => describeToolCall({ command }, undefined, same);
const request = (command: string) => ({ id: 'k7m2x', tool: 'Bash', ...describe_(command) });

describe('approval text: what runs is what shows', () => {
  it('a 230-character command is shown whole (the old 200-character cut hid its tail)', () => {
    expect(LONG_TAIL.length).toBe(230);
    const text = describe_(LONG_TAIL);
    expect(text).toEqual({ summary: LONG_TAIL, detail: LONG_TAIL, cut: false });
    const prompt = formatApprovalPrompt(request(LONG_TAIL), { timeoutSeconds: 300 }).text;
    expect(prompt).toContain('touch HIDDEN-TAIL');
  });

  it('a newline is shown as \\n, never folded into a space', () => {
    const text = describe_(NEWLINE);
    expect(text.summary).toBe('echo harmless\\ntouch HIDDEN-LINE');
    expect(formatApprovalPrompt(request(NEWLINE), { timeoutSeconds: 300 }).text).toContain('`echo harmless\\ntouch HIDDEN-LINE`');
  });

  it('220 zero-width spaces are one visible escape with their count, and the tail shows', () => {
    expect(describe_(ZERO_WIDTH).summary).toBe('ls\\u{200B}×220; touch HIDDEN-ZW');
  });

  it('bidirectional controls, BOM, NBSP, tag and other invisible characters are escapes; plain text and CJK stay', () => {
    const tricky = 'a\u202Eb\u2066c\u200Fd\uFEFFe\u00A0f\u{E0041}g\u3164h 中文 é';
    expect(showInvisible(tricky)).toBe('a\\u{202E}b\\u{2066}c\\u{200F}d\\u{FEFF}e\\u{00A0}f\\u{E0041}g\\u{3164}h 中文 é');
    expect(showInvisible('x\t\ty\r\n')).toBe('x\\t\\ty\\r\\n');
  });

  it('past PROMPT_MAX the prompt shows the start, says plainly it is cut, and /approval <id> shows all of it', () => {
    const command = `echo ${'b'.repeat(PROMPT_MAX)} ; touch HIDDEN-PAST-THE-CUT`;
    const r = request(command);
    expect(r.cut).toBe(true);
    expect(r.summary.length).toBeLessThanOrEqual(PROMPT_MAX);
    const prompt = formatApprovalPrompt(r, { timeoutSeconds: 300 }).text;
    expect(prompt).not.toContain('HIDDEN-PAST-THE-CUT');
    expect(prompt).toMatch(/cut: 499 of 533 characters shown; send \/approval k7m2x to see all of it/);
    const whole = formatWholeRequest(r);
    expect(whole.replace(/\n/g, '')).toContain('touch HIDDEN-PAST-THE-CUT');
    expect(whole).toMatch(/^Approval k7m2x: the whole Bash call \(533 characters/);
  });

  it('an escape is never cut in half', () => {
    const command = `${'c'.repeat(PROMPT_MAX - 5)}\u200b\u200b; rm x`;
    const { summary } = describe_(command);
    expect(summary).toBe(`${'c'.repeat(PROMPT_MAX - 5)}…`);
  });

  it("the requester's display name is a code span in the prompt, never a link or emphasis", () => {
    const prompt = formatApprovalPrompt(request('ls'), { timeoutSeconds: 300, requester: '[click](https://evil.example) **boss**' }).text;
    expect(prompt).toContain('Only `[click](https://evil.example) **boss**` or an admin can answer.');
    const bidi = formatApprovalPrompt(request('ls'), { timeoutSeconds: 300, requester: 'Ada\u202Enimda' }).text;
    expect(bidi).toContain('Only `Ada\\u{202E}nimda` or an admin');
  });
});
