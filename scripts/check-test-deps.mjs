#!/usr/bin/env node
// `npm test`'s first step: the system programs the tests run, beside node and npm. One line naming
// what is missing and the apt-get command that installs it, instead of a failure deep in a suite;
// silent when everything is there. The list is .ci/run's (and the README's); test/integration/
// cli/test-deps.test.ts keeps the three in step.
import fs from 'node:fs';
import path from 'node:path';
import { findPgBin } from '../test/fakes/pg-cluster.mjs';

/** Debian package → what the tests use of it, and whether it is there. */
const SYSTEM_PACKAGES = [
  // the dashboard tests drive it through playwright-core (test/browser/dashboard.test.ts)
  { name: 'chromium', needs: '/usr/bin/chromium', found: () => fs.existsSync('/usr/bin/chromium') },
  // OpenCode's grep and glob tools, in the tests that run the real CLI
  { name: 'ripgrep', needs: 'rg', found: () => onPath('rg') },
  // the interactive `service chat` and `service init` prompts run in a terminal (test/helpers/terminal.ts)
  { name: 'tmux', needs: 'tmux', found: () => onPath('tmux') },
  // throwaway clusters for the PostgreSQL store tests (test/fakes/pg-cluster.mjs), run as `postgres` when root
  { name: 'postgresql', needs: 'initdb and pg_ctl', found: () => hasPgServer() },
  // the README set-up test copies the working tree as a clone has it (git ls-files)
  { name: 'git', needs: 'git', found: () => onPath('git') },
  // the OpenAI-compatible endpoint is tried from curl, as its docs show it
  { name: 'curl', needs: 'curl', found: () => onPath('curl') },
  // an e2e test has the real Claude Code run a Python program in its shell
  { name: 'python3', needs: 'python3', found: () => onPath('python3') },
];

const missing = SYSTEM_PACKAGES.filter((p) => !p.found());
if (missing.length > 0) {
  const what = missing.map((p) => `${p.name} (${p.needs})`).join(', ');
  const install = `apt-get install -y --no-install-recommends ${missing.map((p) => p.name).join(' ')}`;
  console.error(`npm test: missing system packages: ${what}; install them with: ${process.getuid?.() === 0 ? '' : 'sudo '}${install}`);
  process.exitCode = 1;
}

function onPath(name) {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir, name), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function hasPgServer() {
  try {
    findPgBin();
  } catch {
    return false;
  }
  // PostgreSQL refuses to run as root: the clusters run as the `postgres` user Debian's package makes.
  if (process.getuid?.() !== 0) return true;
  try {
    return /^postgres:/m.test(fs.readFileSync('/etc/passwd', 'utf8'));
  } catch {
    return false;
  }
}
