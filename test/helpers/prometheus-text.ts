/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for tests: a line that is
 * not exactly what the format allows is an error naming the line, instead of being skipped.
 * (No maintained strict parser is on npm: `parse-prometheus-text-format` 1.1.1 is lenient and
 * unmaintained.) Checked, as Prometheus's own parser does:
 * - the text ends with a newline; lines are `# HELP name text`, `# TYPE name type`, other
 *   comments, blank lines, or samples `name{label="value",...} value [timestamp]`;
 * - names and label names are well formed, label values use only the escapes \\ \" \n, and a
 *   sample names no label twice;
 * - values are floats, `+Inf`/`-Inf` or `NaN` (any case, as Go's ParseFloat, which Prometheus
 *   uses, reads them: prom-client writes `Nan`);
 * - at most one HELP and one TYPE per family, TYPE before the family's samples, a family's
 *   samples in one block, no series twice;
 * - counters are never negative; every histogram series has cumulative `_bucket`s ending with
 *   `le="+Inf"`, equal to its `_count`, and a `_sum`.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help?: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count'] };

export function parsePrometheusText(text: string): Map<string, Family> {
  if (text !== '' && !text.endsWith('\n')) throw new Error('the exposition does not end with a newline');
  const families = new Map<string, Family>();
  const closed = new Set<string>();
  const series = new Set<string>();
  const typed = new Set<string>();
  let current: string | undefined;
  const lines = text.split('\n').slice(0, -1);
  const family = (name: string, lineNo: number): Family => {
    const f = families.get(name) ?? { name, type: 'untyped' as const, samples: [] };
    if (closed.has(name)) throw new Error(`line ${lineNo}: family ${name} continues after another one began`);
    if (current !== name && current !== undefined) closed.add(current);
    current = name;
    families.set(name, f);
    return f;
  };
  lines.forEach((line, i) => {
    const lineNo = i + 1;
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (!m) return; // another comment
      const [, kind, name = '', rest = ''] = m;
      if (!NAME.test(name)) throw new Error(`line ${lineNo}: bad metric name ${JSON.stringify(name)}`);
      const f = family(name, lineNo);
      if (kind === 'HELP') {
        if (f.help !== undefined) throw new Error(`line ${lineNo}: second HELP for ${name}`);
        f.help = unescape(rest, false, lineNo);
      } else {
        if (!TYPES.has(rest.trim())) throw new Error(`line ${lineNo}: bad type ${JSON.stringify(rest)}`);
        if (f.samples.length > 0 || typed.has(name)) throw new Error(`line ${lineNo}: TYPE of ${name} after its samples or twice`);
        f.type = rest.trim() as Family['type'];
        typed.add(name);
      }
      return;
    }
    const sample = parseSample(line, lineNo);
    const base = familyOf(sample.name, families);
    const f = family(base, lineNo);
    const id = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (series.has(id)) throw new Error(`line ${lineNo}: series ${id} appears twice`);
    series.add(id);
    if (f.type === 'counter' && !(sample.value >= 0)) throw new Error(`line ${lineNo}: counter ${sample.name} is ${sample.value}`);
    f.samples.push(sample);
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** The value of one series: the family's sample of `name` (default: the family name) with exactly these labels. */
export function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}, sampleName = name): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  return families.get(name)?.samples.find((s) => s.name === sampleName && JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}

// --- internal ---

function parseSample(line: string, lineNo: number): Sample {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?[ \t]+(\S+)(?:[ \t]+(-?\d+))?[ \t]*$/.exec(line);
  if (!m) throw new Error(`line ${lineNo}: not a sample: ${JSON.stringify(line)}`);
  const [, name = '', rawLabels, rawValue = ''] = m;
  return { name, labels: rawLabels ? parseLabels(rawLabels.slice(1, -1), lineNo) : {}, value: parseValue(rawValue, lineNo) };
}

function parseLabels(body: string, lineNo: number): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = body;
  while (rest.length > 0) {
    const m = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,?)/.exec(rest);
    if (!m) throw new Error(`line ${lineNo}: bad labels {${body}}`);
    const [all, key = '', value = '', comma] = m;
    if (!LABEL.test(key) || key in labels) throw new Error(`line ${lineNo}: bad or repeated label ${key}`);
    labels[key] = unescape(value, true, lineNo);
    rest = rest.slice(all.length);
    if (!comma && rest.length > 0) throw new Error(`line ${lineNo}: labels not separated by commas: {${body}}`);
  }
  return labels;
}

function unescape(text: string, quoteAllowed: boolean, lineNo: number): string {
  return text.replace(/\\(.)/g, (_, c: string) => {
    if (c === '\\') return '\\';
    if (c === 'n') return '\n';
    if (c === '"' && quoteAllowed) return '"';
    throw new Error(`line ${lineNo}: bad escape \\${c}`);
  });
}

function parseValue(raw: string, lineNo: number): number {
  const lower = raw.toLowerCase();
  if (lower === 'nan') return Number.NaN;
  if (lower === '+inf' || lower === 'inf') return Number.POSITIVE_INFINITY;
  if (lower === '-inf') return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`line ${lineNo}: bad value ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** The family a sample belongs to: its own name, or the histogram/summary it is a part of. */
function familyOf(sample: string, families: Map<string, Family>): string {
  for (const [type, suffixes] of Object.entries(SUFFIXES)) {
    for (const suffix of suffixes) {
      const base = sample.slice(0, -suffix.length);
      if (sample.endsWith(suffix) && families.get(base)?.type === type) return base;
    }
  }
  return sample;
}

function checkHistogram(f: Family): void {
  const bySeries = new Map<string, { buckets: Array<[number, number]>; sum?: number; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = bySeries.get(key) ?? { buckets: [] };
    bySeries.set(key, entry);
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new Error(`${f.name}: a bucket without le`);
      entry.buckets.push([parseValue(le, 0), s.value]);
    } else if (s.name === `${f.name}_sum`) entry.sum = s.value;
    else if (s.name === `${f.name}_count`) entry.count = s.value;
    else throw new Error(`${f.name}: unexpected sample ${s.name}`);
  }
  for (const [key, e] of bySeries) {
    const sorted = [...e.buckets].sort((a, b) => a[0] - b[0]);
    const last = sorted.at(-1);
    if (!last || last[0] !== Number.POSITIVE_INFINITY) throw new Error(`${f.name}${key}: no le="+Inf" bucket`);
    sorted.forEach(([, v], i) => {
      if (i > 0 && v < (sorted[i - 1]?.[1] ?? 0)) throw new Error(`${f.name}${key}: buckets are not cumulative`);
    });
    if (e.count === undefined || e.sum === undefined || e.count !== last[1])
      throw new Error(`${f.name}${key}: _count and the +Inf bucket differ, or _sum is missing`);
  }
}
