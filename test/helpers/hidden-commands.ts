/**
 * The three commands that once hid their harmful part from an approval prompt (issue 29, Medium 2),
 * each touching its own marker file: a 230-character command whose tail is past the old
 * 200-character cut, a second line the prompt folded into a space, and a tail behind 220
 * zero-width spaces.
 */
export const LONG_TAIL = `echo ${'a'.repeat(204)} && touch HIDDEN-TAIL`;
export const NEWLINE = 'echo harmless\ntouch HIDDEN-LINE';
export const ZERO_WIDTH = `ls${'\u200b'.repeat(220)}; touch HIDDEN-ZW`;

/** What each one shows in a prompt now (core's escapes), and the file its hidden part makes. */
export const HIDDEN_COMMANDS = [
  { name: 'a 230-character command with a harmful tail', command: LONG_TAIL, shown: LONG_TAIL, marker: 'HIDDEN-TAIL' },
  { name: 'echo …\\ntouch …', command: NEWLINE, shown: 'echo harmless\\ntouch HIDDEN-LINE', marker: 'HIDDEN-LINE' },
  { name: 'ls + 220 × U+200B + ; touch …', command: ZERO_WIDTH, shown: 'ls\\u{200B}×220; touch HIDDEN-ZW', marker: 'HIDDEN-ZW' },
] as const;
