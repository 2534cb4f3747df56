import { parseDocument, type Document } from 'yaml';
import { ConfigError } from '../errors.js';

/**
 * service.yaml's text as a YAML document (comments and layout kept, for write-back); a syntax
 * error is a ConfigError naming the file, the line and the column. A module of its own so the
 * PATCH worker thread (config-edit-worker.ts) can parse without loading the schema.
 */
export function parseYaml(text: string, file: string): Document {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    // Later syntax errors are nearly always echoes of the first; report that one precisely.
    const pos = first.linePos?.[0];
    const message = first.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '') ?? 'invalid YAML';
    const problem = `${pos ? `line ${pos.line}, column ${pos.col}` : 'YAML'}: ${message}`;
    const hint = /\{\s*[^}\n]*\$\{/.test(text) ? 'quote ${VAR} placeholders inside { } mappings: key: "${VAR}"' : undefined;
    throw new ConfigError(file, [problem], hint);
  }
  return doc;
}
