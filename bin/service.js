#!/usr/bin/env node
// `service --version` (or -v) alone is answered here, before the CLI loads: commander, the config
// schema and the command table cost more than starting node itself, and a version check (an
// installer's, a script's) should not. Every other invocation goes to the CLI, which prints the
// same line for a --version given with other arguments.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${version}\n`);
} else {
  await import('../dist/cli.js');
}
