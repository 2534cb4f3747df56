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
  // A gateway spends most of its life idle between short turns, and what it keeps is small. So:
  // a young generation that stays at its initial size (1 MB semi-spaces rather than growing to
  // 8-16 MB), and an old generation collected once it grows 20% past what survived the last full
  // collection (rather than up to 4x): measured, 14 MB less resident at idle and 8 MB less after a
  // burst of turns, for no CPU per turn we could measure. Set before the CLI loads, while the heap is new.
  // And no optimizing compiler (TurboFan) while the command starts: module bodies, the YAML
  // lexer and the config schema run hot once, and compiling them optimised cost 4-5 MB resident
  // that an idle gateway kept, for nothing. `service gateway` turns it back on once it serves
  // (core/util/optimizer.ts): /health under load and long sessions need it.
  const v8 = await import('node:v8');
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  v8.setFlagsFromString('--heap-growing-percent=20');
  v8.setFlagsFromString('--no-opt');
  // The bundled command line (scripts/bundle.mjs): one chunk per lazy import, loaded as needed.
  await import('../dist/bundle/cli.js');
}
