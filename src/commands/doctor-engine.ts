import os from 'node:os';
import path from 'node:path';
import type { LoadedConfig } from '../core/config/load.js';
import { bundledBinDir, formatBundledFix, locateEngine } from '../core/engines/detect.js';
import { engineDefinitions } from '../core/engines/registry.js';
import { probeVersion } from '../core/engines/runner.js';
import type { EngineDefinition } from '../core/engines/types.js';
import { removeNpmBinDirs } from '../core/invocation.js';
import type { DoctorCheck } from './doctor.js';

/**
 * The engine's program as a turn finds it (this shell's PATH), its version and where it comes
 * from, and its credentials. A copy this package bundles (a checkout's node_modules/.bin, on PATH
 * only inside npm scripts and npx) is named with the fix that makes it reachable from a shell.
 */
export async function checkEngine(def: EngineDefinition, loaded: LoadedConfig | undefined): Promise<DoctorCheck[]> {
  const title = `${def.id} (${def.title})`;
  const configured = loaded ? { config: loaded.config, dir: loaded.dir } : undefined;
  const location = locateEngine(def, process.env.PATH, configured);
  if (!location.found) return [{ ok: false, title, detail: location.problem, fix: location.fix }];
  const bin = location.binary;
  // A configured program (any ACP agent) need not know --version; the ones this engine knows do.
  const named = configured && def.configuredBinary?.(configured.config);
  const unknownProgram = named !== undefined && !def.binaries.includes(path.basename(named));
  const version = unknownProgram ? undefined : await probeVersion(bin);
  const checks: DoctorCheck[] = [];
  if (version && !version.ok) {
    checks.push({
      ok: false,
      title,
      detail: `${bin}: ${version.text}`,
      fix: `reinstall: ${def.npmPackage ? `npm install -g ${def.npmPackage}` : "the vendor's installer"}`,
    });
  } else {
    const what = `${bin} ${version ? version.text : '(version not probed: not a program this engine knows)'}`;
    // The bundled copy is fine where the user put its folder on PATH themselves, not where npm did.
    const onlyInNpmScripts = location.bundled && !locateEngine(def, removeNpmBinDirs(process.env), configured).found;
    checks.push(
      onlyInNpmScripts
        ? {
            ok: true,
            warn: true,
            title,
            detail: `${what}: the copy this package bundles, on PATH here only because npm or npx put it there; a shell started by you does not find it`,
            fix: formatBundledFix(def),
          }
        : { ok: true, title, detail: location.bundled ? `${what} (the copy this package bundles)` : what },
    );
  }
  if (loaded) {
    const cred = def.credentialStatus({ config: loaded.config, env: process.env, home: os.homedir() });
    checks.push({
      ok: cred.ok,
      title: `${def.id} credentials`,
      detail: cred.detail,
      ...(cred.ok ? {} : { fix: cred.detail.replace(/^no credentials: /, '') }),
    });
  }
  return checks;
}

/**
 * Every engine whose CLI is on PATH, so a user choosing another one sees what is installed; and
 * those only this package bundles, which a shell reaches once their folder is on PATH.
 */
export function listInstalledEngines(): DoctorCheck {
  const onPath: string[] = [];
  const bundledOnly: string[] = [];
  for (const def of Object.values(engineDefinitions)) {
    const location = locateEngine(def, process.env.PATH);
    if (location.found) onPath.push(`${def.id} (${def.title}: ${path.basename(location.binary)}${location.bundled ? ', bundled' : ''})`);
    else if (location.bundled) bundledOnly.push(`${def.id} (${def.title}: ${path.basename(location.bundled)})`);
  }
  const bundled = bundledOnly.length > 0 ? `; bundled with this package in ${bundledBinDir()}, not on PATH: ${bundledOnly.join(', ')}` : '';
  return { ok: true, title: 'engines on PATH', detail: `${onPath.length > 0 ? onPath.join(', ') : 'none'}${bundled}` };
}
