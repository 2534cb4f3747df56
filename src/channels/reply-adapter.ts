import type { RunningAdapters } from './running-adapters.js';
import { type ChannelAdapter, ChannelError, type OpenStreamOptions, type ReplyStream, type ReplyTarget } from './types.js';

/**
 * What a reply needs of a channel: its outbound side (reply, typing, in-place streams, approval
 * prompts, files) and what measures a message (name, limit, render).
 */
export type ReplyAdapter = Pick<
  ChannelAdapter,
  | 'name'
  | 'limit'
  | 'render'
  | 'reply'
  | 'edit'
  | 'remove'
  | 'typing'
  | 'openStream'
  | 'askApproval'
  | 'sendFile'
  | 'maxFileBytes'
  | 'editIntervalMs'
  | 'typingLastsMs'
>;

/**
 * A channel's outbound side bound late: every call goes through the adapter running when it is
 * made (the running-adapter table), not the one that took the message in. A turn takes seconds
 * to minutes, and the hub may replace the channel's adapter meanwhile (it failed and was
 * restarted): the stopped one would refuse the reply, and the reply would be lost. A call made
 * while no adapter runs waits for the next one to connect, up to `waitMs`; then it rejects.
 *
 * `first` is the adapter running when the message was taken up: a channel's capabilities and
 * limits are its definition's, the same for every adapter of it, so they are read from it.
 * "typing…" is best effort: it goes to the adapter running now, or nowhere.
 *
 * A reply updated in place (`openStream`) belongs to the adapter that opened it: when another one
 * runs by the next update, the text so far goes into a new in-place reply opened on that one
 * (the platform shows the old one as it last was).
 */
export function createReplyAdapter(adapters: RunningAdapters, first: ChannelAdapter, waitMs: number): ReplyAdapter {
  const channel = first.name;
  const running = async (): Promise<ChannelAdapter> => {
    const adapter = await adapters.whenRunning(channel, waitMs);
    if (!adapter) throw new ChannelError(channel, 'not_connected', `no adapter has been running for ${Math.round(waitMs / 1000)} s to send the reply through`);
    return adapter;
  };
  const typing: ChannelAdapter['typing'] = async (to) => void (await adapters.get(channel)?.typing?.(to));
  const askApproval: ChannelAdapter['askApproval'] = async (to, prompt) => capable(await running(), 'askApproval')(to, prompt);
  const sendFile: ChannelAdapter['sendFile'] = async (to, file) => capable(await running(), 'sendFile')(to, file);
  const openStream: ChannelAdapter['openStream'] = (to, opts) => openFollowingStream(to, running, opts);
  const edit: ChannelAdapter['edit'] = async (message, markdown) => capable(await running(), 'edit')(message, markdown);
  const remove: ChannelAdapter['remove'] = async (message) => capable(await running(), 'remove')(message);
  return {
    name: channel,
    limit: first.limit,
    render: (markdown) => (adapters.get(channel) ?? first).render(markdown),
    reply: async (to, markdown) => (await running()).reply(to, markdown),
    ...(first.maxFileBytes !== undefined ? { maxFileBytes: first.maxFileBytes } : {}),
    ...(first.typing ? { typing } : {}),
    ...(first.askApproval ? { askApproval } : {}),
    ...(first.sendFile ? { sendFile } : {}),
    ...(first.openStream ? { openStream } : {}),
    ...(first.edit ? { edit } : {}),
    ...(first.remove ? { remove } : {}),
    ...(first.editIntervalMs !== undefined ? { editIntervalMs: first.editIntervalMs } : {}),
    ...(first.typingLastsMs !== undefined ? { typingLastsMs: first.typingLastsMs } : {}),
  };
}

// --- internal ---

/** The adapter's method `name`, bound to it (every adapter of a channel has the same capabilities). */
function capable<K extends 'askApproval' | 'sendFile' | 'openStream' | 'edit' | 'remove'>(adapter: ChannelAdapter, name: K): NonNullable<ChannelAdapter[K]> {
  const method = adapter[name];
  if (!method) throw new ChannelError(adapter.name, 'other', `the running adapter has no ${name}`);
  return method.bind(adapter) as NonNullable<ChannelAdapter[K]>;
}

/** An in-place reply that moves to the running adapter when the one that opened it was replaced. */
async function openFollowingStream(to: ReplyTarget, running: () => Promise<ChannelAdapter>, opts?: OpenStreamOptions): Promise<ReplyStream> {
  let owner = await running();
  let stream = await capable(owner, 'openStream')(to, opts);
  const current = async (): Promise<ReplyStream> => {
    const now = await running();
    if (now !== owner) {
      owner = now;
      stream = await capable(now, 'openStream')(to, opts);
    }
    return stream;
  };
  return {
    update: async (markdown, status) => (await current()).update(markdown, status),
    finish: async (markdown) => (await current()).finish(markdown),
    ...(stream.showsStatus ? { showsStatus: true } : {}),
  };
}
