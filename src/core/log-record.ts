/** What a line is about, as fields (JSON only: the text line already says it in words). */
export type LogFields = Readonly<Record<string, string | number | boolean | undefined>>;

/**
 * One JSON log line: `time`, `level`, `component`, `message`, then the call's fields. Every text
 * in it is redacted before it is encoded (an encoded secret would no longer match). JSON.stringify
 * escapes C0 controls; what it leaves raw and line-oriented tools may still break on (DEL, the C1
 * controls, U+2028 and U+2029) is escaped too, so a record is always exactly one line.
 */
export interface LogRecord {
  time: Date;
  level: string;
  component: string;
  message: string;
  fields?: LogFields;
}

/** Names a call's fields cannot take: they would overwrite the record's own. */
const RESERVED = new Set(['time', 'level', 'component', 'message']);
const RAW_CONTROLS = /[\u007f-\u009f\u2028\u2029]/g;

export function formatJsonRecord(record: LogRecord, redact: (text: string) => string): string {
  const out: Record<string, unknown> = {
    time: record.time.toISOString(),
    level: record.level,
    component: redact(record.component),
    message: redact(record.message),
  };
  for (const [key, value] of Object.entries(record.fields ?? {})) {
    if (value === undefined || RESERVED.has(key)) continue;
    out[redact(key)] = typeof value === 'string' ? redact(value) : Number.isFinite(value) || typeof value === 'boolean' ? value : String(value);
  }
  return JSON.stringify(out).replace(RAW_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
