import { escapeControl } from './util/escape-text.js';
import { formatJsonRecord, type LogFields } from './log-record.js';

/**
 * Leveled logger to stderr. Children add a `[prefix]` (in JSON, the `component`); every line goes
 * through redaction of the secret values of the loaded config, so a token can never reach a log
 * file, and then through escaping of control characters, so one call is always one line: a
 * client-controlled value (a URL path, a channel name) can never forge a line of its own or send
 * terminal escapes. The JSON format (`--log-format json`, SERVICE_LOG_FORMAT, gateway.logFormat)
 * writes one object per line with the same guarantees, and the structured fields the call gave.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export type LogFormat = 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

export type { LogFields } from './log-record.js';

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger for a part of the program: `[prefix]` in text, `component` in JSON; `fields` go on each of its lines. */
  child(prefix: string, fields?: LogFields): Logger;
  /** Register more secret values to redact (after a config reload). */
  addSecrets(values: Iterable<string>): void;
  /** The text with every registered secret replaced, for output that does not go through a log call. */
  redact(text: string): string;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface LoggerOptions {
  level?: LogLevel;
  /** Default: SERVICE_LOG_FORMAT when it is `json`, else text. */
  format?: LogFormat;
  /** The JSON `component` of the root logger's own lines (default `service`). */
  component?: string;
  write?: (line: string) => void;
  secrets?: Iterable<string>;
  /** The JSON `time` (tests). */
  now?: () => Date;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? (process.env.SERVICE_LOG_LEVEL as LogLevel | undefined) ?? 'info';
  const min = ORDER[level] ?? ORDER.info;
  const format = opts.format ?? (process.env.SERVICE_LOG_FORMAT === 'json' ? 'json' : 'text');
  const now = opts.now ?? (() => new Date());
  const write = opts.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const secrets = new Set<string>();
  const addSecrets = (values: Iterable<string>) => {
    for (const v of values) if (v.length >= 4) secrets.add(v);
  };
  addSecrets(opts.secrets ?? []);

  const redact = (msg: string) => {
    let out = msg;
    for (const s of secrets) out = out.split(s).join('***');
    return out;
  };

  const make = (prefix: string, components: readonly string[], bound: LogFields): Logger => {
    const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
      if (ORDER[lvl] < min) return;
      if (format === 'json') {
        const component = components.length > 0 ? components.join('.') : (opts.component ?? 'service');
        write(formatJsonRecord({ time: now(), level: lvl, component, message: msg, fields: { ...bound, ...fields } }, redact));
        return;
      }
      const tag = lvl === 'info' ? '' : `${lvl}: `;
      write(escapeControl(redact(`${prefix}${tag}${msg}`)));
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      child: (p, f) => make(`${prefix}[${p}] `, [...components, p], { ...bound, ...f }),
      addSecrets,
      redact,
    };
  };
  return make('', [], {});
}

/** A logger that drops everything (tests, embedding). */
export function createSilentLogger(): Logger {
  return createLogger({ level: 'silent' });
}

/** `text` or `json` from a flag or a variable; anything else is undefined (the caller names the source in its error). */
export function parseLogFormat(raw: string | undefined): LogFormat | undefined {
  return LOG_FORMATS.find((f) => f === raw?.trim().toLowerCase());
}
