import fs from 'node:fs';
import path from 'node:path';
import { stageFileAtomic, writeFileAtomic } from '../atomic-write.js';
import { AppError, ConfigError, errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import { mergeOffThread } from './edit-thread.js';
import { fileSizeProblem } from './limits.js';
import { configFromDataInTurns, loadConfig, parseConfigText, type ConfigCheck, type LoadedConfig } from './load.js';
import type { ConfigSchemaParts } from './schema.js';
import { holdsLiteralSecret } from './secrets.js';
import { editConfigText, type DocumentEdit } from './write-back.js';

/**
 * The live configuration. Every component reads `current()` when it needs a value, so a change
 * (a PATCH, `/model`, `service cron disable` in another process) applies to the next turn without
 * a restart. Edits are validated before anything is written: an edit that would leave an invalid
 * file is refused and the file is untouched.
 */
export interface ConfigSource {
  /** The schema parts this source validates with (for validating partial changes). */
  readonly parts: ConfigSchemaParts;
  readonly env: NodeJS.ProcessEnv;
  current(): LoadedConfig;
  /** Apply an edit through write-back; returns the new config. Throws ConfigError (file untouched). */
  edit(edit: DocumentEdit): LoadedConfig;
  /**
   * Merge a partial record (write-back's mergePatch) as `edit` does, without holding up the event
   * loop: the YAML work runs on a worker thread, the file is written and synced in the thread
   * pool. One merge at a time; an edit that lands while one runs is never overwritten.
   */
  merge(patch: Record<string, unknown>): Promise<LoadedConfig>;
  /** Re-read the file (after an outside change); a broken file keeps the last good config. */
  reload(): void;
  onChange(listener: (next: LoadedConfig, previous: LoadedConfig) => void): () => void;
  /** Follow outside changes of service.yaml until the returned function is called. */
  watch(): () => void;
  /** The text of the configuration in force: what the file held when this source last read or wrote it. */
  text(): string;
  /**
   * Hold back reloads of outside changes until every hold is released (a turn a non-admin started
   * is running: what it changed is undone first, so it is never applied); then reload once.
   */
  hold(): () => void;
}

export interface ConfigSourceOptions {
  dir: string;
  parts: ConfigSchemaParts;
  checks?: readonly ConfigCheck[];
  env?: NodeJS.ProcessEnv;
  log?: Logger;
}

export function createConfigSource(opts: ConfigSourceOptions): ConfigSource {
  let loaded = loadConfig(opts);
  let text = fs.readFileSync(loaded.file, 'utf8');
  const listeners = new Set<(next: LoadedConfig, previous: LoadedConfig) => void>();
  let merges: Promise<unknown> = Promise.resolve();
  let holds = 0;
  let heldBack = false;

  const adopt = (next: LoadedConfig, nextText: string) => {
    const previous = loaded;
    loaded = next;
    text = nextText;
    for (const l of listeners) {
      try {
        l(next, previous);
      } catch (err) {
        opts.log?.error(`config change listener failed: ${errorMessage(err)}`);
      }
    }
  };

  const reload = () => {
    if (holds > 0) {
      heldBack = true;
      return;
    }
    let nextText: string;
    try {
      nextText = fs.readFileSync(loaded.file, 'utf8');
    } catch (err) {
      opts.log?.warn(`cannot read ${loaded.file}: ${errorMessage(err)}; keeping the last good configuration`);
      return;
    }
    if (nextText === text) return;
    try {
      adopt(parseConfigText(nextText, { ...opts, file: loaded.file }), nextText);
      opts.log?.info(`${path.basename(loaded.file)} changed; new settings apply to the next turn`);
    } catch (err) {
      const detail = err instanceof ConfigError ? err.problems.join('; ') : errorMessage(err);
      opts.log?.warn(`${loaded.file} is invalid now (${detail}); keeping the last good configuration`);
    }
  };

  return {
    parts: opts.parts,
    env: opts.env ?? process.env,
    current: () => loaded,
    edit(edit) {
      const current = fs.readFileSync(loaded.file, 'utf8');
      const nextText = editConfigText(current, loaded.file, edit);
      const next = parseConfigText(nextText, { ...opts, file: loaded.file });
      // A literal secret in the file (a PATCHed token) makes it 0600; otherwise its mode is kept.
      if (nextText !== current) writeFileAtomic(loaded.file, nextText, holdsLiteralSecret(next.raw) ? { mode: 0o600 } : {});
      adopt(next, nextText);
      return next;
    },
    merge(patch) {
      const run = async (): Promise<LoadedConfig> => {
        for (let attempt = 1; ; attempt++) {
          const file = loaded.file;
          const base = fs.readFileSync(file, 'utf8');
          const merged = await mergeOffThread({ text: base, file, patch, env: { ...(opts.env ?? process.env) } });
          const tooLarge = fileSizeProblem(merged.text, 'would be');
          if (tooLarge) throw new ConfigError(file, [tooLarge]);
          const next = await configFromDataInTurns(merged.raw, { ...opts, file });
          const staged = merged.text === base ? undefined : await stageFileAtomic(file, merged.text, holdsLiteralSecret(next.raw) ? { mode: 0o600 } : {});
          // Another edit landed meanwhile (a slash command, `service cron`, a hand edit): merge into it, never over it.
          if (fs.readFileSync(file, 'utf8') !== base) {
            staged?.discard();
            if (attempt < 3) continue;
            throw new AppError('config_busy', `${file} kept changing while the change was applied; try again`);
          }
          const synced = staged?.commit();
          adopt(next, merged.text);
          await synced;
          return next;
        }
      };
      const result = merges.then(run, run);
      merges = result.catch(() => undefined);
      return result;
    },
    reload,
    text: () => text,
    hold() {
      holds++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        if (--holds > 0 || !heldBack) return;
        heldBack = false;
        reload();
      };
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    watch() {
      // Watch the directory: the file itself is replaced by rename on every atomic write.
      let timer: NodeJS.Timeout | undefined;
      const watcher = fs.watch(path.dirname(loaded.file), (_event, name) => {
        if (name !== null && name !== path.basename(loaded.file)) return;
        clearTimeout(timer);
        timer = setTimeout(reload, 100);
      });
      watcher.on('error', (err) => opts.log?.warn(`cannot watch ${loaded.file}: ${errorMessage(err)}`));
      return () => {
        clearTimeout(timer);
        watcher.close();
      };
    },
  };
}
