import { atxHeading, TEXT_RULE } from '../markdown.js';
import { linkUnlessBare, renderMarkdownDialect, type MarkdownDialect } from '../markdown-dialect.js';
import { fenceCode, formatTableText } from '../markdown-table.js';

/** The rule Discord shows for `---` (it has no horizontal rule of its own). */
export const DISCORD_RULE = TEXT_RULE;

/**
 * Discord's Markdown is close to CommonMark, so most syntax is re-emitted as written; the
 * differences: `__x__` is underline on Discord, so strong is always written `**x**` (the shared
 * renderer does); headings exist only for levels 1-3, deeper ones become bold lines; there are no
 * tables, a table becomes a code block with aligned columns; `---` is not a rule; images cannot be
 * inlined by URL in a bot message's text, they become links. HTML and Discord-only syntax
 * (`||spoiler||`) pass through.
 */
const DISCORD: MarkdownDialect = {
  stripControls: false,
  text: (s) => s,
  heading: (depth, text) => (depth <= 3 ? atxHeading(depth, text) : `**${text}**`),
  table: (t) => fenceCode(formatTableText(t)),
  rule: DISCORD_RULE,
  strikethrough: true,
  link: linkUnlessBare, // `<url>` stays: Discord shows it without an embed
  inlineImages: false,
  stripHtml: false,
  strictBlankLines: false,
};

/** Markdown → Discord's flavour (pure). */
export function renderDiscordMarkdown(markdown: string): string {
  return renderMarkdownDialect(markdown, DISCORD);
}
