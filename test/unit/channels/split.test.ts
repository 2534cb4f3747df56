import { describe, expect, it } from 'vitest';
import { measure, splitMessage } from '../../../src/channels/split.js';

describe('splitting replies for a platform', () => {
  it('keeps a reply that fits whole', () => {
    expect(splitMessage('hello\n\nworld', { max: 100, unit: 'chars' })).toEqual(['hello\n\nworld']);
    expect(splitMessage('   ', { max: 100, unit: 'chars' })).toEqual([]);
  });

  it('splits at paragraph breaks, each part within the limit', () => {
    const paras = Array.from({ length: 10 }, (_, i) => `Paragraph ${i} ${'x'.repeat(30)}`);
    const parts = splitMessage(paras.join('\n\n'), { max: 100, unit: 'chars' });
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(100);
    expect(parts.join('\n\n')).toBe(paras.join('\n\n'));
  });

  it('never splits inside a code block when the block fits; re-fences a code block that does not', () => {
    const code = '```ts\nconst a = 1;\n\nconst b = 2;\n```';
    const parts = splitMessage(`intro ${'y'.repeat(40)}\n\n${code}\n\noutro`, { max: 60, unit: 'chars' });
    expect(parts.some((p) => p.includes(code))).toBe(true);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(60);
    const long = `\`\`\`py\n${Array.from({ length: 30 }, (_, i) => `print(${i})`).join('\n')}\n\`\`\``;
    const pieces = splitMessage(long, { max: 80, unit: 'chars' });
    expect(pieces.length).toBeGreaterThan(1);
    for (const p of pieces) {
      expect(p.startsWith('```py\n')).toBe(true);
      expect(p.endsWith('\n```')).toBe(true);
      expect(p.length).toBeLessThanOrEqual(80);
    }
    expect(pieces.map((p) => p.slice(6, -4)).join('\n')).toBe(Array.from({ length: 30 }, (_, i) => `print(${i})`).join('\n'));
  });

  it('counts bytes where the platform does: CJK text splits by UTF-8 bytes', () => {
    const cjk = '这是一个很长的中文句子，用来测试按字节拆分。'.repeat(200);
    const parts = splitMessage(cjk, { max: 2048, unit: 'bytes' });
    for (const p of parts) expect(measure(p, 'bytes')).toBeLessThanOrEqual(2048);
    expect(parts.join('')).toBe(cjk);
    expect(parts.length).toBeGreaterThanOrEqual(Math.ceil(Buffer.byteLength(cjk) / 2048));
  });

  it('measures the rendered text, not the Markdown (escaping can make it longer)', () => {
    const escape = (s: string) => s.replace(/[._]/g, '\\$&');
    const text = 'a.b_c. '.repeat(100);
    const parts = splitMessage(text, { max: 120, unit: 'chars' }, escape);
    for (const p of parts) expect(escape(p).length).toBeLessThanOrEqual(120);
    expect(parts.join(' ').replace(/\s+/g, ' ').trim()).toBe(text.trim());
  });

  it('never cuts an emoji or other surrogate pair', () => {
    const parts = splitMessage('😀'.repeat(50), { max: 7, unit: 'chars' });
    for (const p of parts) expect(p).toMatch(/^(😀)+$/u);
  });
});
