/**
 * Engine names as people write them. `engine` takes the spec's id (`engine_b`) or the program's
 * own name (`claude`); everything that writes service.yaml writes the id. Handed in as data (the
 * engine registry owns the table), so config never imports an engine.
 */
export interface EngineName {
  id: string;
  /** The program, for humans ("Claude Code"). */
  title: string;
  /** Other names accepted for the id ("claude"). */
  aliases: readonly string[];
}

/** The id `name` stands for (an id or an alias), else undefined. */
export function resolveEngineName(name: unknown, engines: readonly EngineName[]): string | undefined {
  if (typeof name !== 'string') return undefined;
  return engines.find((e) => e.id === name || e.aliases.includes(name))?.id;
}

/** Every id with its program beside it, for messages: "engine_b (Claude Code, alias claude), …, acp (ACP agent)". */
export function describeEngineChoices(engines: readonly EngineName[]): string {
  return engines.map((e) => `${e.id} (${[e.title, ...e.aliases.map((a) => `alias ${a}`)].join(', ')})`).join(', ');
}

/** One engine, as messages name it: "engine_b (Claude Code)". */
export function describeEngine(id: string, engines: readonly EngineName[]): string {
  const e = engines.find((x) => x.id === id);
  return e ? `${e.id} (${e.title})` : id;
}

/**
 * A settings record (a PATCH body) with the engine names it holds turned into ids: `engine`, and
 * the keys of `provider.models`. Anything else, and names that are no engine, are left as sent
 * (the schema then reports them).
 */
export function withEngineIds(record: Record<string, unknown>, engines: readonly EngineName[]): Record<string, unknown> {
  const out = { ...record };
  const id = resolveEngineName(out.engine, engines);
  if (id !== undefined) out.engine = id;
  const provider = out.provider;
  if (isRecord(provider) && isRecord(provider.models)) out.provider = { ...provider, models: withEngineKeys(provider.models, engines) };
  return out;
}

/** Keys that are engine names → ids; an alias whose id is a key too stays as written (the schema reports it). */
export function withEngineKeys(map: Record<string, unknown>, engines: readonly EngineName[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(map)) {
    const id = resolveEngineName(key, engines);
    out[id !== undefined && (id === key || !Object.hasOwn(map, id)) ? id : key] = value;
  }
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
