import type { MessageLimit } from './types.js';

/**
 * Split a Markdown reply into messages that each fit the platform's limit once rendered in its
 * flavour, counted its way (characters or UTF-8 bytes: CJK text is three bytes a character).
 * Splits fall at paragraph breaks and between code blocks; a block too big on its own is split
 * by lines (a code block re-opens its fence in every part), then by words, then by characters.
 */
export function splitMessage(markdown: string, limit: MessageLimit, render: (md: string) => string = (s) => s): string[] {
  const text = markdown.trim();
  if (text === '') return [];
  const fits = (md: string) => measure(render(md), limit.unit) <= limit.max;
  if (fits(text)) return [text];

  const parts: string[] = [];
  let current = '';
  for (const block of toBlocks(text)) {
    const joined = current ? `${current}\n\n${block}` : block;
    if (fits(joined)) {
      current = joined;
      continue;
    }
    if (current) parts.push(current);
    if (fits(block)) {
      current = block;
      continue;
    }
    const pieces = splitBlock(block, fits);
    current = pieces.pop() ?? '';
    parts.push(...pieces);
  }
  if (current) parts.push(current);
  return parts;
}

export function measure(text: string, unit: MessageLimit['unit']): number {
  return unit === 'bytes' ? Buffer.byteLength(text, 'utf8') : text.length;
}

// --- internal ---

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;

/** Paragraphs and whole code blocks (a blank line inside a fence does not end it). */
function toBlocks(text: string): string[] {
  const blocks: string[] = [];
  let lines: string[] = [];
  let fence: string | undefined;
  const flush = () => {
    if (lines.length > 0) blocks.push(lines.join('\n'));
    lines = [];
  };
  for (const line of text.split('\n')) {
    const m = FENCE.exec(line);
    if (fence === undefined && m) {
      flush();
      fence = m[1]?.[0]?.repeat(3);
      lines.push(line);
      continue;
    }
    if (fence !== undefined) {
      lines.push(line);
      if (m && line.trim().startsWith(fence)) {
        fence = undefined;
        flush();
      }
      continue;
    }
    if (line.trim() === '') flush();
    else lines.push(line);
  }
  flush();
  return blocks;
}

function splitBlock(block: string, fits: (md: string) => boolean): string[] {
  const lines = block.split('\n');
  const fenceMatch = FENCE.exec(lines[0] ?? '');
  if (fenceMatch && lines.length >= 2) {
    const open = lines[0] ?? '```';
    const close = fenceMatch[1] ?? '```';
    const hasClose = FENCE.test(lines[lines.length - 1] ?? '') && lines.length > 1;
    const body = lines.slice(1, hasClose ? -1 : undefined);
    const wrap = (inner: string[]) => `${open}\n${inner.join('\n')}\n${close}`;
    return pack(
      body,
      (group) => fits(wrap(group)),
      (line) => hardSplit(line, (s) => fits(wrap([s]))),
    ).map(wrap);
  }
  const packed = pack(
    lines,
    (group) => fits(group.join('\n')),
    (line) => splitLine(line, fits),
  );
  return packed.map((g) => g.join('\n'));
}

/** Greedy packing of items into groups that fit; an item that fits nowhere is split first. */
function pack(items: string[], groupFits: (group: string[]) => boolean, splitItem: (item: string) => string[]): string[][] {
  const groups: string[][] = [];
  let current: string[] = [];
  const expanded = items.flatMap((item) => (groupFits([item]) ? [item] : splitItem(item)));
  for (const item of expanded) {
    if (groupFits([...current, item])) current.push(item);
    else {
      if (current.length > 0) groups.push(current);
      current = [item];
    }
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

function splitLine(line: string, fits: (md: string) => boolean): string[] {
  const words = line.split(/(?<=\s)/);
  if (words.length > 1 && words.every((w) => fits(w))) {
    const out: string[] = [];
    let cur = '';
    for (const w of words) {
      if (cur && !fits(cur + w)) {
        out.push(cur.trimEnd());
        cur = '';
      }
      cur += w;
    }
    if (cur.trim()) out.push(cur.trimEnd());
    return out;
  }
  return hardSplit(line, fits);
}

/** Largest fitting prefixes, never cutting a character (surrogate pairs stay whole). */
function hardSplit(text: string, fits: (s: string) => boolean): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  let start = 0;
  while (start < chars.length) {
    let lo = 1;
    let hi = chars.length - start;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (fits(chars.slice(start, start + mid).join(''))) lo = mid;
      else hi = mid - 1;
    }
    out.push(chars.slice(start, start + lo).join(''));
    start += lo;
  }
  return out;
}
