/**
 * Split a byte-less text stream into lines with a carry-over buffer: engines print NDJSON lines
 * of hundreds of KB that arrive in several chunks. CRLF is accepted. A line longer than
 * `maxLineLength` is dropped (reported through onOverflow) instead of growing without bound.
 */
export interface LineSplitter {
  push(chunk: string): void;
  /** Emit the last line when the stream ended without a newline. */
  flush(): void;
}

export function createLineSplitter(onLine: (line: string) => void, opts: { maxLineLength?: number; onOverflow?: (length: number) => void } = {}): LineSplitter {
  const max = opts.maxLineLength ?? 64 * 1024 * 1024;
  let carry = '';
  let overflowing = false;
  const emit = (line: string) => {
    const clean = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (clean.length > 0) onLine(clean);
  };
  return {
    push(chunk) {
      let start = 0;
      for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
        const piece = chunk.slice(start, nl);
        if (overflowing) overflowing = false;
        else emit(carry + piece);
        carry = '';
        start = nl + 1;
      }
      if (overflowing) return;
      carry += chunk.slice(start);
      if (carry.length > max) {
        opts.onOverflow?.(carry.length);
        carry = '';
        overflowing = true;
      }
    },
    flush() {
      if (!overflowing && carry) emit(carry);
      carry = '';
      overflowing = false;
    },
  };
}
