import path from 'node:path';
import { CONFIG_FILE_NAME } from '../paths.js';
import type { ConfigSource } from '../config/source.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { AccessGrant, AccessStore } from '../store/types.js';
import { CONTROL_FILES, type FileState, readFileState, REJECTED_DIR, restoreFile } from './control-files.js';

/**
 * The check after a turn that a non-admin started (issue 29): whatever the engine was allowed to
 * do, the assistant's control files and its access grants come out of such a turn as they went
 * in, and a configuration change made meanwhile is never applied.
 *
 * - From the moment the first such turn starts until the last one ends (the window), the config
 *   source holds back reloads of outside changes of service.yaml.
 * - When each such turn ends: service.yaml is put back to the configuration in force (which
 *   includes edits made through the gateway itself: a PATCH, an admin's /model); .env and the
 *   gateway token back to what they were when the window opened; access grants that appeared in
 *   the window and were not made through this process's access admin are revoked. What was undone
 *   is kept in `.service/rejected/` and logged; the turn's reply says so.
 * - Then the hold is released: a reload finds the file as it was.
 *
 * The price: an edit the owner makes by hand (or with `service access approve` from another
 * process) while a non-admin's turn runs is undone too; it is kept and logged, never lost.
 */
export interface ControlGuard {
  /** A turn a non-admin started begins; `end` checks and undoes (idempotent), returning what to tell the person. */
  begin(who: string): { end(): Promise<string | undefined> };
  /** A grant made through the access admin (an admin's /approve, the dashboard, the HTTP API): never undone. */
  noteGrant(grant: AccessGrant): void;
}

export interface ControlGuardDeps {
  dir: string;
  config: ConfigSource;
  store: Pick<AccessStore, 'accessGrants' | 'revokeGrant'>;
  log: Logger;
  now?: () => number;
}

export function createControlGuard(deps: ControlGuardDeps): ControlGuard {
  const now = deps.now ?? Date.now;
  const log = deps.log.child('guard');
  let open = 0;
  let release: (() => void) | undefined;
  let files = new Map<string, FileState>();
  /** Grants at the window's start, then ones this process made in it, by `<channel>:<kind>:<id>`. */
  let grants: Promise<Set<string>> = Promise.resolve(new Set());
  const noted = new Set<string>();
  const keyOf = (g: AccessGrant) => `${g.channel}:${g.kind}:${g.id}`;

  const openWindow = () => {
    release = deps.config.hold();
    files = new Map(CONTROL_FILES.filter((f) => f !== CONFIG_FILE_NAME).map((f) => [f, readFileState(path.join(deps.dir, f))]));
    noted.clear();
    grants = deps.store.accessGrants().then(
      (list) => new Set(list.map(keyOf)),
      (err: unknown) => {
        log.warn(`cannot read the access grants before a turn: ${errorMessage(err)}`);
        return new Set<string>();
      },
    );
  };

  const check = async (who: string): Promise<string | undefined> => {
    const t = now();
    const undone: string[] = [];
    const config = { content: Buffer.from(deps.config.text()), mode: 0o600 };
    const modeNow = readFileState(path.join(deps.dir, CONFIG_FILE_NAME)).mode;
    if (restoreFile(deps.dir, CONFIG_FILE_NAME, { ...config, mode: modeNow }, t)) undone.push(CONFIG_FILE_NAME);
    for (const [file, before] of files) if (restoreFile(deps.dir, file, before, t)) undone.push(file);
    const revoked = await revokeForged(who);
    if (undone.length === 0 && revoked.length === 0) return undefined;
    const parts = [...(undone.length > 0 ? [`changed ${undone.join(', ')}`] : []), ...(revoked.length > 0 ? [`granted access to ${revoked.join(', ')}`] : [])];
    log.warn(
      `a turn ${who} started ${parts.join(' and ')}; only a turn an admin started may, so it was undone${undone.length > 0 ? ` (what it wrote is kept in ${REJECTED_DIR}/)` : ''}`,
    );
    return `(This turn ${parts.join(' and ')}: only an admin may change the assistant's own settings, so that was undone.)`;
  };

  const revokeForged = async (who: string): Promise<string[]> => {
    try {
      const before = await grants;
      const forged = (await deps.store.accessGrants()).filter((g) => !before.has(keyOf(g)) && !noted.has(keyOf(g)));
      for (const g of forged) await deps.store.revokeGrant(g.channel, g.id);
      return forged.map((g) => `${g.channel}:${g.id}`);
    } catch (err) {
      log.error(`cannot check the access grants after a turn ${who} started: ${errorMessage(err)}`);
      return [];
    }
  };

  return {
    begin(who) {
      if (open++ === 0) openWindow();
      let ended: Promise<string | undefined> | undefined;
      return {
        end() {
          ended ??= check(who)
            .catch((err: unknown) => {
              log.error(`the check after a turn ${who} started failed: ${errorMessage(err)}`);
              return undefined;
            })
            .finally(() => {
              if (--open === 0) {
                release?.();
                release = undefined;
              }
            });
          return ended;
        },
      };
    },
    noteGrant(grant) {
      if (open > 0) noted.add(keyOf(grant));
    },
  };
}
