import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** Where the assistant keeps its private state (database, token, scratch images). */
export const STATE_DIR_NAME = '.service';
export const CONFIG_FILE_NAME = 'service.yaml';

export interface AssistantPaths {
  dir: string;
  configFile: string;
  stateDir: string;
  database: string;
  imagesDir: string;
  /** Each turn's outbox folder is made in here (files the agent sends). */
  outboxDir: string;
  /** Files the agent sent, kept for delivery and download. */
  sentFilesDir: string;
  tokenFile: string;
  skillsDir: string;
}

export function resolveAssistantPaths(dir: string): AssistantPaths {
  const root = path.resolve(dir);
  const stateDir = path.join(root, STATE_DIR_NAME);
  return {
    dir: root,
    configFile: path.join(root, CONFIG_FILE_NAME),
    stateDir,
    database: path.join(stateDir, 'state.db'),
    imagesDir: path.join(stateDir, 'images'),
    outboxDir: path.join(stateDir, 'outbox'),
    sentFilesDir: path.join(stateDir, 'files'),
    tokenFile: path.join(stateDir, 'gateway-token'),
    skillsDir: path.join(root, 'skills'),
  };
}

/** The package root (holds templates/ and package.json), found from this compiled file's location. */
export function packageRoot(): string {
  // dist/core/paths.js (and src/core/paths.ts) → ../..; in the bundle, dist/bundle/<chunk>.js → ../.. as well.
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
}

export function templatesDir(): string {
  return path.join(packageRoot(), 'templates');
}

/** This package's version (package.json). */
export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
