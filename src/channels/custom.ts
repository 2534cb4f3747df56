import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { AppError } from '../core/errors.js';
import { createLifecycle } from './lifecycle.js';
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
  return wrapCustomAdapter(adapter, deps.name);
}

/**
 * The user's adapter behind the lifecycle contract of types.ts (start once, stop idempotent,
 * platform calls only while started), with defaults for the parts a small adapter may leave out.
 * Its own start runs at most once, and its stop only once its start was called.
 */
function wrapCustomAdapter(inner: ChannelAdapter, name: string): ChannelAdapter {
  const lifecycle = createLifecycle(name, { connect: (context) => inner.start(context), release: () => inner.stop() });
  const whenStarted =
    <A extends unknown[], R>(what: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      lifecycle.assertStarted(what);
      return fn.apply(inner, args);
    };
  const adapter: ChannelAdapter = {
    name,
    limit: inner.limit ?? { max: 4000, unit: 'chars' as const },
    render: typeof inner.render === 'function' ? inner.render.bind(inner) : (md: string) => md,
    start: lifecycle.start,
    stop: lifecycle.stop,
    reply: whenStarted('reply', inner.reply),
    ...(typeof inner.maxFileBytes === 'number' ? { maxFileBytes: inner.maxFileBytes } : {}),
    ...(typeof inner.editIntervalMs === 'number' ? { editIntervalMs: inner.editIntervalMs } : {}),
    ...(typeof inner.typingLastsMs === 'number' ? { typingLastsMs: inner.typingLastsMs } : {}),
  };
  if (inner.send) adapter.send = whenStarted('send', inner.send);
  if (inner.edit) adapter.edit = whenStarted('edit', inner.edit);
  if (inner.remove) adapter.remove = whenStarted('remove', inner.remove);
  if (inner.typing) adapter.typing = async (to) => (lifecycle.isStarted() ? inner.typing?.(to) : undefined);
  if (inner.openStream) adapter.openStream = whenStarted('openStream', inner.openStream);
  if (inner.readHistory) adapter.readHistory = whenStarted('readHistory', inner.readHistory);
  if (inner.downloadImage) adapter.downloadImage = whenStarted('downloadImage', inner.downloadImage);
  if (inner.downloadFile) adapter.downloadFile = whenStarted('downloadFile', inner.downloadFile);
  if (inner.sendFile) adapter.sendFile = whenStarted('sendFile', inner.sendFile);
  if (inner.askApproval) adapter.askApproval = whenStarted('askApproval', inner.askApproval);
  return adapter;
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
