import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

const created: string[] = [];

/**
 * A temp directory holding the given files (`{ 'service.yaml': '...', 'skills/x/SKILL.md': '...' }`),
 * removed after the current test.
 */
export function testdir(files: Record<string, string> = {}, prefix = 'service-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(dir);
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(dir, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
  return dir;
}

afterEach(() => {
  for (const dir of created.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

export const minimalYaml = (engine = 'engine_b', extra = ''): string => `name: test-bot\nengine: ${engine}\n${extra}`;
