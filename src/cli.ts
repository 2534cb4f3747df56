import fs from 'node:fs';
import path from 'node:path';
import { createProgram } from './commands/program.js';
import { processIO } from './commands/io.js';

/**
 * The command-line entry: the program of commands/program.ts on this process's arguments and output;
 * its exit code becomes the process's.
 */
loadDotEnv();
process.exitCode = await createProgram(processIO).run(process.argv.slice(2));

// --- internal ---

/** A .env file in the working directory supplies ${VAR} placeholders (existing variables win). */
function loadDotEnv(): void {
  const file = path.resolve('.env');
  if (!fs.existsSync(file)) return;
  try {
    process.loadEnvFile(file);
  } catch (err) {
    processIO.err(`warning: could not read ${file}: ${(err as Error).message}`);
  }
}
