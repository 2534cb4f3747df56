import { escapeControl } from './util/escape-text.js';

/**
 * Leveled logger to stderr. Children add a `[prefix]`; every line goes through redaction of the
 * secret values of the loaded config, so a token can never reach a log file, and then through
 * escaping of control characters, so one call is always one line: a client-controlled value (a
 * URL path, a channel name) can never forge a line of its own or send terminal escapes.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  child(prefix: string): Logger;
  /** Register more secret values to redact (after a config reload). */
  addSecrets(values: Iterable<string>): void;
  /** The text with every registered secret replaced, for output that does not go through a log call. */
  redact(text: string): string;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface LoggerOptions {
  level?: LogLevel;
  write?: (line: string) => void;
  secrets?: Iterable<string>;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? (process.env.SERVICE_LOG_LEVEL as LogLevel | undefined) ?? 'info';
  const min = ORDER[level] ?? ORDER.info;
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

  const make = (prefix: string): Logger => {
    const emit = (lvl: LogLevel, msg: string) => {
      if (ORDER[lvl] < min) return;
      const tag = lvl === 'info' ? '' : `${lvl}: `;
      write(escapeControl(redact(`${prefix}${tag}${msg}`)));
    };
    return {
      debug: (m) => emit('debug', m),
      info: (m) => emit('info', m),
      warn: (m) => emit('warn', m),
      error: (m) => emit('error', m),
      child: (p) => make(`${prefix}[${p}] `),
      addSecrets,
      redact,
    };
  };
  return make('');
}

/** A logger that drops everything (tests, embedding). */
export function createSilentLogger(): Logger {
  return createLogger({ level: 'silent' });
}
