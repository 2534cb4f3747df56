/**
 * Every error we throw on purpose is an AppError with a stable `code`, an exit code for the CLI
 * and an optional hint. `src/cli.ts` is the one place that turns them into text and exit codes.
 */
export class AppError extends Error {
  readonly code: string;
  readonly exitCode: number;
  readonly hint?: string;

  constructor(code: string, message: string, opts: { hint?: string; exitCode?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.code = code;
    this.exitCode = opts.exitCode ?? 1;
    if (opts.hint !== undefined) this.hint = opts.hint;
  }
}

/** A configuration file that cannot be used; `problems` holds one line per issue, each with its YAML path. */
export class ConfigError extends AppError {
  readonly file: string;
  readonly problems: string[];

  constructor(file: string, problems: string[], hint?: string) {
    const head = problems.length === 1 ? `${file}: 1 problem` : `${file}: ${problems.length} problems`;
    super('config_invalid', [head, ...problems.map((p) => `  - ${p}`)].join('\n'), hint === undefined ? {} : { hint });
    this.file = file;
    this.problems = problems;
  }
}

export class UsageError extends AppError {
  constructor(message: string, hint?: string) {
    super('usage', message, hint === undefined ? { exitCode: 2 } : { hint, exitCode: 2 });
  }
}

/** Message of anything thrown, for logs and in-band error events. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : JSON.stringify(err);
}
