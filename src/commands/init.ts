import fs from 'node:fs';
import path from 'node:path';
import { type Document, isMap, isScalar } from 'yaml';
import { editConfigText } from '../core/config/write-back.js';
import { findEngineBinary, locateEngine } from '../core/engines/detect.js';
import { findOnPath } from '../core/util/find-on-path.js';
import { engineDefinitions, enginePreference, getEngine } from '../core/engines/registry.js';
import { AppError } from '../core/errors.js';
import { formatCliCommand, formatShellWord, removeNpmBinDirs } from '../core/invocation.js';
import { CONFIG_FILE_NAME, STATE_DIR_NAME, resolveAssistantPaths } from '../core/paths.js';
import { DEFAULT_TEMPLATE, TEMPLATE_META_FILE, builtinSkillsDir, copyTree, getTemplate, listTemplates } from '../core/templates/templates.js';
import type { CommandIO } from './io.js';

export interface InitOptions {
  dir: string;
  template?: string;
  engine?: string;
  name?: string;
  yes?: boolean;
  force?: boolean;
}

/** `service init`: scaffold an assistant directory from a scenario template plus the built-in skills. */
export async function runInit(opts: InitOptions, io: CommandIO): Promise<number> {
  const paths = resolveAssistantPaths(opts.dir);
  if (fs.existsSync(paths.configFile) && !opts.force) {
    throw new AppError('init_exists', `${paths.configFile} already exists; nothing was changed`, {
      hint: 'use --force to overwrite it (other files in the directory are kept)',
    });
  }
  const choices = await chooseOptions(opts, io, path.basename(paths.dir));
  const template = getTemplate(choices.template);
  const engine = getEngine(choices.engine);
  // An engine that runs a program named in its own block (acp) gets that block: the first it finds installed.
  const initial = engine.options && engine.initOptions?.((binary) => findOnPath([binary]) !== undefined);

  fs.mkdirSync(paths.dir, { recursive: true });
  copyTree(template.dir, paths.dir, { skip: [TEMPLATE_META_FILE, CONFIG_FILE_NAME], overwrite: Boolean(opts.force) });
  copyTree(builtinSkillsDir(), paths.skillsDir, { overwrite: Boolean(opts.force) });

  const templateYaml = fs.readFileSync(path.join(template.dir, CONFIG_FILE_NAME), 'utf8');
  const yaml = editConfigText(templateYaml, paths.configFile, (doc) => {
    doc.set('name', choices.name);
    // The id, whatever name was given (`--engine claude`), with every engine listed above it.
    doc.set('engine', engine.id);
    describeEnginesAbove(doc);
    if (engine.options && initial) doc.set(engine.options.key, initial.block);
  });
  fs.writeFileSync(paths.configFile, yaml);
  fs.mkdirSync(paths.stateDir, { recursive: true, mode: 0o700 });
  ensureGitignore(path.join(paths.dir, '.gitignore'));

  const rel = path.relative(process.cwd(), paths.dir) || '.';
  const cd = rel === '.' ? '' : `cd ${formatShellWord(rel)} && `;
  const next: Array<[command: string, why: string]> = [
    [formatCliCommand('doctor'), 'check the engine, credentials and channels'],
    [formatCliCommand('chat'), 'talk to it in the terminal'],
    [formatCliCommand('gateway'), 'serve the HTTP API, dashboard and IM channels'],
  ];
  const width = Math.max(...next.map(([command]) => command.length));
  const program = initial?.program;
  const missing = program !== undefined && findOnPath([program]) === undefined;
  // The hints below are typed into a shell: whether the engine starts there (PATH without what npm added).
  const located = program === undefined ? locateEngine(engine, removeNpmBinDirs(process.env)) : undefined;
  const notInShell = located && !located.found ? [`Note: ${located.engine}: ${located.problem}`, `      fix: ${located.fix}`] : [];
  io.out(
    [
      `Created assistant "${choices.name}" (${template.title}, ${engine.title}${program ? `: ${program}` : ''}) in ${paths.dir}`,
      ...(missing ? [`Note: ${program} is not on PATH; install it or set ${engine.options?.key}.command in ${CONFIG_FILE_NAME}`] : []),
      ...notInShell,
      '',
      'Next:',
      ...next.map(([command, why]) => `  ${cd}${command.padEnd(width)}  # ${why}`),
    ].join('\n'),
  );
  return 0;
}

// --- internal ---

async function chooseOptions(opts: InitOptions, io: CommandIO, defaultName: string): Promise<{ template: string; engine: string; name: string }> {
  const installed = enginePreference.filter((id) => {
    const def = engineDefinitions[id];
    return def !== undefined && findEngineBinary(def) !== undefined;
  });
  const defaults = { template: DEFAULT_TEMPLATE, engine: installed[0] ?? enginePreference[0] ?? '', name: defaultName };
  const interactive = io.isTTY && !opts.yes;
  if (!interactive) {
    return {
      template: opts.template ?? defaults.template,
      engine: opts.engine ?? defaults.engine,
      name: opts.name ?? defaults.name,
    };
  }
  const { select, input } = await import('@inquirer/prompts');
  const template =
    opts.template ??
    (await select({
      message: 'Template',
      default: defaults.template,
      choices: listTemplates().map((t) => ({ value: t.name, name: `${t.name}  ${t.description}` })),
    }));
  const engine =
    opts.engine ??
    (await select({
      message: 'Engine',
      default: defaults.engine,
      choices: enginePreference.map((id) => ({
        value: id,
        name: `${id}  ${engineDefinitions[id]?.title}${installed.includes(id) ? '  (found on PATH)' : ''}`,
      })),
    }));
  const name = opts.name ?? (await input({ message: 'Assistant name', default: defaults.name }));
  return { template, engine, name };
}

/** The comment above `engine:`: every engine of the registry, its program and the name it may be given instead. */
function describeEnginesAbove(doc: Document): void {
  const pair = isMap(doc.contents) ? doc.contents.items.find((p) => isScalar(p.key) && p.key.value === 'engine') : undefined;
  if (!pair || !isScalar(pair.key)) return;
  const defs = Object.values(engineDefinitions);
  const width = Math.max(...defs.map((d) => d.id.length));
  pair.key.commentBefore = [
    ' Coding-agent engine that runs every turn: an id below, or the name in brackets:',
    ...defs.map((d) => `   ${d.id.padEnd(width)} = ${d.title}${d.aliases.length ? ` (${d.aliases.join(', ')})` : ''}`),
  ].join('\n');
}

function ensureGitignore(file: string): void {
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const lines = new Set(current.split(/\r?\n/).map((l) => l.trim()));
  const entries: Array<[line: string[], comment: string]> = [
    [[`${STATE_DIR_NAME}/`, STATE_DIR_NAME], '# private state of the assistant (sessions, tokens, scratch images)'],
    // Gemini CLI (engine_e) reads its provider and MCP settings, resolved secrets included, only from here.
    [['.gemini/settings.json', '.gemini/', '.gemini'], '# engine settings the gateway writes, with resolved credentials'],
  ];
  let add = '';
  for (const [[line, ...alike], comment] of entries) {
    if (lines.has(line as string) || alike.some((l) => lines.has(l))) continue;
    add += `${comment}\n${line}\n`;
  }
  if (!add) return;
  const sep = current === '' || current.endsWith('\n') ? '' : '\n';
  fs.writeFileSync(file, `${current}${sep}${add}`);
}
