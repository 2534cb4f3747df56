import fs from 'node:fs';
import { isMap, isNode, isScalar, isSeq, type Document } from 'yaml';
import { writeFileAtomic } from '../atomic-write.js';
import { AppError } from '../errors.js';
import { hasPlaceholder, resolvePlaceholders } from './env.js';
import { matchLines } from './line-diff.js';
import { parseYaml } from './yaml-document.js';
import { MASK } from './secrets.js';

/**
 * Changes to service.yaml go through the YAML document, never through a re-serialised config
 * object: comments, key order, unknown keys and `${VAR}` placeholders outside the changed keys
 * survive byte for byte, and a resolved secret is never written into the file.
 */
export type DocumentEdit = (doc: Document) => void;

/** Apply an edit to the file atomically; returns the new text. Throws when the edit leaves invalid YAML. */
export function editConfigFile(file: string, edit: DocumentEdit): string {
  const text = fs.readFileSync(file, 'utf8');
  const next = editConfigText(text, file, edit);
  if (next !== text) writeFileAtomic(file, next);
  return next;
}

export function editConfigText(text: string, file: string, edit: DocumentEdit): string {
  const doc = parseYaml(text, file);
  const before = doc.toString(STRINGIFY);
  edit(doc);
  const after = doc.toString(STRINGIFY);
  return before === after ? text : carryOverUnchangedLines(text, before, after);
}

/**
 * Deep-merge a partial record into the document: objects merge key by key, arrays and scalars
 * replace, `null` removes the key. A value equal to what a placeholder currently resolves to, or
 * the mask shown for secrets, leaves the placeholder (or secret) in place.
 */
export function mergePatch(patch: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): DocumentEdit {
  return (doc) => mergeAt(doc, [], patch, env);
}

/** What a merge needs, as plain data: it crosses to the PATCH worker thread (edit-thread.ts). */
export interface MergeJob {
  text: string;
  file: string;
  patch: Record<string, unknown>;
  env: Record<string, string | undefined>;
}

/** The text-level work of a merge: the new text, and that text parsed into plain data (unvalidated). */
export function mergeText(job: MergeJob): { text: string; raw: unknown } {
  const text = editConfigText(job.text, job.file, mergePatch(job.patch, job.env));
  return { text, raw: parseYaml(text, job.file).toJS() ?? {} };
}

/** Set one key of the task with this id (`enabled`), or remove the task when `value` is undefined. */
export function editTask(id: string, change: { enabled: boolean } | 'delete'): DocumentEdit {
  return (doc) => {
    const tasks = doc.get('tasks', true);
    const index = isSeq(tasks) ? tasks.items.findIndex((item) => isMap(item) && String(item.get('id')) === id) : -1;
    if (index < 0) throw new AppError('task_not_found', `No task with id "${id}" in service.yaml`);
    if (change === 'delete') doc.deleteIn(['tasks', index]);
    else setScalar(doc, ['tasks', index, 'enabled'], change.enabled);
  };
}

/**
 * Append a task to `tasks:` (made when missing, null or an empty `[]`): a block list item, the
 * rest of the file as it was.
 */
export function addTask(task: Record<string, unknown>): DocumentEdit {
  return (doc) => {
    const tasks = doc.get('tasks', true);
    if (isSeq(tasks) && tasks.items.length > 0) tasks.add(doc.createNode(task));
    else doc.set('tasks', doc.createNode([task]));
  };
}

// --- internal ---

const STRINGIFY = { lineWidth: 0 } as const;

/**
 * The yaml library re-serialises the whole document (comment spacing, indentation). Diff its
 * rendering before and after the edit line by line and apply only the changed lines to the
 * original text, so every untouched line is kept byte for byte. When the original does not map
 * line for line onto the rendering (rare layouts), the rendering is used as is.
 */
function carryOverUnchangedLines(original: string, before: string, after: string): string {
  const o = original.split('\n');
  const b = before.split('\n');
  const a = after.split('\n');
  const same = (x: string, y: string) => x.replace(/\s+/g, ' ').trim() === y.replace(/\s+/g, ' ').trim();
  if (o.length !== b.length || o.some((line, i) => !same(line, b[i] ?? ''))) return after;
  // A kept line of the rendering stands for its original line; a new one is taken as rendered.
  const out = [...a];
  matchLines(b, a).forEach((from, j) => {
    if (from >= 0) out[j] = o[from] as string;
  });
  return out.join('\n');
}

function mergeAt(doc: Document, path: Array<string | number>, patch: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  for (const [key, value] of Object.entries(patch)) {
    const at = [...path, key];
    const existing = doc.getIn(at, true);
    if (value === null) {
      if (existing !== undefined) doc.deleteIn(at);
    } else if (isPlainObject(value) && isMap(existing)) {
      mergeAt(doc, at, value, env);
    } else if (!keepsCurrent(existing, value, env)) {
      setScalar(doc, at, value);
    }
  }
}

function keepsCurrent(existing: unknown, value: unknown, env: NodeJS.ProcessEnv): boolean {
  if (value === MASK) return true;
  // An equal value (an array sent back as it was) keeps the node and so its layout and comments.
  if (isNode(existing) && JSON.stringify(existing.toJSON()) === JSON.stringify(value)) return true;
  if (!isScalar(existing) || typeof existing.value !== 'string' || !hasPlaceholder(existing.value)) return false;
  return resolvePlaceholders(existing.value, env).value === value;
}

function setScalar(doc: Document, path: Array<string | number>, value: unknown): void {
  const existing = doc.getIn(path, true);
  if (isScalar(existing) && (value === null || typeof value !== 'object')) {
    if (typeof existing.value !== typeof value) delete existing.type; // drop a quoting style that no longer fits
    existing.value = value; // keeps the node's comments and position
    return;
  }
  doc.setIn(path, doc.createNode(value));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
