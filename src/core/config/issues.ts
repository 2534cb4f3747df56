import type { z } from 'zod';
import { isSecretPath } from './secrets.js';

/**
 * zod issues → one line per problem, `<yaml.path>: <what is wrong>`, sorted by path.
 * Values are quoted only for enum mismatches on non-secret fields; nothing else echoes input.
 */
export function formatIssues(issues: readonly z.core.$ZodIssue[], prefix: Array<string | number> = []): string[] {
  const lines = issues.flatMap((issue) => formatIssue(issue, [...prefix, ...issue.path.map(pathKey)]));
  return [...new Set(lines)].sort(comparePaths);
}

export function formatPath(path: ReadonlyArray<string | number>): string {
  if (path.length === 0) return '(root)';
  return path
    .map((seg, i) => (typeof seg === 'number' ? `[${seg}]` : i === 0 ? seg : `.${seg}`))
    .join('')
    .replace(/\.\[/g, '[');
}

// --- internal ---

function pathKey(seg: PropertyKey): string | number {
  return typeof seg === 'number' ? seg : String(seg);
}

function formatIssue(issue: z.core.$ZodIssue, path: Array<string | number>): string[] {
  const at = formatPath(path);
  switch (issue.code) {
    case 'invalid_type': {
      if (isCustom(issue.message)) return [`${at}: ${issue.message}`];
      const got = describeType(issue.input);
      return [got === 'undefined' ? `${at}: required (${issue.expected})` : `${at}: expected ${issue.expected}, got ${got}`];
    }
    case 'invalid_value': {
      // A message written in the schema (the engine's, naming each program) says it all.
      if (isCustom(issue.message)) return [`${at}: ${issue.message}`];
      const options = issue.values.map(String).join('|');
      if (issue.input === undefined) return [`${at}: required (one of ${options})`];
      const got = isSecretPath(path) ? describeType(issue.input) : JSON.stringify(issue.input);
      return [`${at}: expected one of ${options}, got ${got}`];
    }
    case 'unrecognized_keys':
      return issue.keys.map((k) => `${formatPath([...path, k])}: unknown key`);
    case 'too_small':
      return [`${at}: ${describeBound('at least', issue.minimum, issue.inclusive, issue.origin)}`];
    case 'too_big':
      return [`${at}: ${describeBound('at most', issue.maximum, issue.inclusive, issue.origin)}`];
    case 'invalid_union': {
      // Report the branch that got furthest instead of "invalid input".
      const best = [...issue.errors].sort((a, b) => a.length - b.length)[0];
      return best && best.length > 0 ? best.flatMap((i) => formatIssue(i, [...path, ...i.path.map(pathKey)])) : [`${at}: ${issue.message}`];
    }
    case 'invalid_format':
      return [`${at}: ${issue.message.replace(/^Invalid\s+/i, 'expected a valid ')}`];
    default:
      return [`${at}: ${cleanMessage(issue.message)}`];
  }
}

function describeBound(word: string, bound: number | bigint, inclusive: boolean | undefined, origin: string): string {
  const unit = origin === 'string' ? ' characters' : origin === 'array' ? ' items' : '';
  if (origin === 'string' && Number(bound) === 1 && word === 'at least') return 'must not be empty';
  if (inclusive === false) return `must be ${word === 'at least' ? 'greater' : 'less'} than ${bound}${unit}`;
  return `must be ${word} ${bound}${unit}`;
}

function describeType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number' && Number.isNaN(v)) return 'NaN';
  return typeof v;
}

/** zod's own messages start with "Invalid"; anything else was written by us in the schema. */
function isCustom(m: string): boolean {
  return !/^Invalid\b/.test(m);
}

function cleanMessage(m: string): string {
  return m.replace(/^Invalid input: /, '');
}

function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
