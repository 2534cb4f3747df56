import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { AppError } from '../errors.js';
import { templatesDir } from '../paths.js';

/** A scenario template under templates/assistant/<name>/, described by its template.json. */
export interface TemplateInfo {
  name: string;
  title: string;
  description: string;
  dir: string;
}

const metaSchema = z.object({ title: z.string().min(1), description: z.string().min(1) });

export const TEMPLATE_META_FILE = 'template.json';
export const DEFAULT_TEMPLATE = 'customer-support';

export function listTemplates(root = templatesDir()): TemplateInfo[] {
  const base = path.join(root, 'assistant');
  return fs
    .readdirSync(base, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => {
      const dir = path.join(base, e.name);
      const meta = metaSchema.parse(JSON.parse(fs.readFileSync(path.join(dir, TEMPLATE_META_FILE), 'utf8')));
      return { name: e.name, ...meta, dir };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

export function getTemplate(name: string, root = templatesDir()): TemplateInfo {
  const all = listTemplates(root);
  const found = all.find((t) => t.name === name);
  if (!found) {
    throw new AppError('template_unknown', `unknown template '${name}', available: ${all.map((t) => t.name).join(', ')}`);
  }
  return found;
}

/** Folder holding the built-in skills copied into every new assistant. */
export function builtinSkillsDir(root = templatesDir()): string {
  return path.join(root, 'skills');
}

/** Copy a folder tree; `skip` names top-level entries to leave out. Existing files are overwritten only with `overwrite`. */
export function copyTree(from: string, to: string, opts: { skip?: string[]; overwrite: boolean }): string[] {
  const written: string[] = [];
  const walk = (src: string, dst: string, top: boolean) => {
    fs.mkdirSync(dst, { recursive: true });
    for (const entry of fs.readdirSync(src, { withFileTypes: true })) {
      if (top && opts.skip?.includes(entry.name)) continue;
      const s = path.join(src, entry.name);
      const d = path.join(dst, entry.name);
      if (entry.isDirectory()) walk(s, d, false);
      else if (entry.isFile()) {
        if (!opts.overwrite && fs.existsSync(d)) continue;
        fs.copyFileSync(s, d);
        fs.chmodSync(d, fs.statSync(s).mode & 0o777);
        written.push(d);
      }
    }
  };
  walk(from, to, true);
  return written;
}
