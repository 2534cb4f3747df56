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
  // A gateway spends most of its life idle between short turns: a young generation that stays at
  // its initial size (1 MB semi-spaces instead of growing to 8-16 MB) keeps its resident memory
  // down, for a few more (cheap) scavenges. Set before the CLI loads, while the heap is new.
  (await import('node:v8')).setFlagsFromString('--semi-space-growth-factor=1');
  await import('../dist/cli.js');
}
