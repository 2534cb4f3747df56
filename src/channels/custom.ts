import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { AppError } from '../core/errors.js';
import type { ChannelAdapter, ChannelDeps } from './types.js';

/**
 * Custom adapters: any other key under `channels:` with an `_adapter` field. `_adapter` names a
 * local `.js`/`.mjs` file (relative to the assistant directory) or an installed package; the
 * module exports `createAdapter(options, deps)` (or a default function) returning a
 * ChannelAdapter. Its other fields are passed as `options`. See examples/adapters/.
 */
export type CustomAdapterFactory = (options: Record<string, unknown>, deps: ChannelDeps) => ChannelAdapter | Promise<ChannelAdapter>;

export async function loadCustomAdapter(spec: string, options: Record<string, unknown>, deps: ChannelDeps): Promise<ChannelAdapter> {
  const url = resolveSpecifier(spec, deps.dir);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (err) {
    throw new AppError('adapter_load', `channels.${deps.name}: cannot load custom adapter ${spec}: ${(err as Error).message}`);
  }
  const factory = (typeof mod.createAdapter === 'function' ? mod.createAdapter : mod.default) as CustomAdapterFactory | undefined;
  if (typeof factory !== 'function') {
    throw new AppError('adapter_shape', `channels.${deps.name}: ${spec} must export a function createAdapter(options, deps) (or a default export)`);
  }
  const adapter = await factory(options, deps);
  const missing = ['start', 'reply', 'stop'].filter((m) => typeof (adapter as unknown as Record<string, unknown>)?.[m] !== 'function');
  if (missing.length > 0) throw new AppError('adapter_shape', `channels.${deps.name}: the adapter from ${spec} has no ${missing.join(', ')} method`);
  // Sensible defaults for the parts a small adapter may leave out.
  return Object.assign(adapter, {
    name: deps.name,
    limit: adapter.limit ?? { max: 4000, unit: 'chars' as const },
    render: typeof adapter.render === 'function' ? adapter.render.bind(adapter) : (md: string) => md,
  });
}

function resolveSpecifier(spec: string, dir: string): string {
  if (spec.startsWith('.') || path.isAbsolute(spec)) return pathToFileURL(path.resolve(dir, spec)).href;
  try {
    // An installed package, resolved from the assistant directory first.
    return pathToFileURL(createRequire(path.join(dir, 'package.json')).resolve(spec)).href;
  } catch {
    return spec;
  }
}
