import { randomInt } from 'node:crypto';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { isRefusal, partsWithStatus } from '../delivery/live-reply.js';
import type { ChatPacer } from '../delivery/pacer.js';
import { splitMessage } from '../split.js';
import type { MessageLimit, ReplyStream, SentMessage } from '../types.js';
import { createLatestSync } from '../latest-sync.js';

export interface DraftReplyDeps {
  name: string;
  limit: MessageLimit;
  render(markdown: string): string;
  /** sendMessageDraft: the text shown as the draft `draftId` (a preview that lasts 30 s). */
  draft(draftId: number, markdown: string): Promise<void>;
  /** sendMessage: a message of the reply, kept in the chat. */
  post(markdown: string): Promise<SentMessage | undefined>;
  pacer: ChatPacer;
  chat: string;
  log: Logger;
  onPosted?: (sent: SentMessage) => void;
  /** Drafts were refused: the reply goes on as an edited message (this one's parts not yet sent). */
  fallback(): ReplyStream;
}

/** A draft lasts 30 s on the user's screen; it is shown again this often while the turn runs. */
export const DRAFT_REFRESH_MS = 20_000;

/**
 * A growing reply in a Telegram private chat through the Bot API's drafts: the text so far is
 * streamed with sendMessageDraft (an animated preview with the status line under it), and once
 * it is final it is sent with sendMessage, which replaces the draft; nothing is edited.
 *
 * - Parts before the last one (the text outgrew 4096 characters) will not change any more: each is
 *   sent as a message at once, and the draft goes on with the next part under a new id.
 * - The draft is shown again every DRAFT_REFRESH_MS while nothing new arrives, so a long tool run
 *   does not let it vanish.
 * - A refused draft (a Bot API server or bot without drafts) hands the reply over to `fallback`:
 *   from then on the rest grows by edits.
 */
export function openDraftReply(d: DraftReplyDeps): ReplyStream {
  const { log, limit } = d;
  const render = (md: string) => d.render(md);
  let sentParts = 0;
  let draftId = newDraftId();
  let drafted = '';
  let edits: ReplyStream | undefined;
  let want: { body: string; status: string | undefined } = { body: '', status: undefined };
  let finished = false;
  const syncing = createLatestSync(
    () => sync(),
    () => finished,
  );
  const refresh = setInterval(() => {
    drafted = '';
    void syncing.request().catch((err: unknown) => log.debug(`${d.name}: the draft could not be shown again: ${errorMessage(err)}`));
  }, DRAFT_REFRESH_MS);
  refresh.unref();

  const pace = <T>(op: () => Promise<T>, idempotent: boolean) => d.pacer.run(d.chat, op, { idempotent });
  /** The text after the parts already sent, as the fallback's whole text. */
  const tailOf = (body: string) => splitMessage(body, limit, render).slice(sentParts).join('\n\n');

  async function post(text: string): Promise<void> {
    const sent = await pace(() => d.post(text), false);
    if (sent) d.onPosted?.(sent);
    sentParts++;
    draftId = newDraftId();
    drafted = '';
  }

  async function sync(): Promise<void> {
    const { body, status } = want;
    if (edits) return edits.update(tailOf(body), status);
    const parts = partsWithStatus(body, status, limit, render);
    while (sentParts < parts.length - 1) await post(parts[sentParts] as string);
    const last = parts[sentParts];
    if (last === undefined || last === drafted) return;
    try {
      await pace(() => d.draft(draftId, last), true);
      drafted = last;
    } catch (err) {
      if (!isRefusal(err)) throw err;
      log.info(`${d.name}: drafts are not available here (${errorMessage(err)}); the reply grows by edits instead`);
      clearInterval(refresh);
      edits = d.fallback();
      await edits.update(tailOf(body), status);
    }
  }

  return {
    showsStatus: true,
    async update(markdown, status) {
      if (finished) return;
      want = { body: markdown, status };
      void syncing.request().catch((err: unknown) => log.warn(`${d.name}: the draft could not be updated: ${errorMessage(err)}`));
    },
    async finish(markdown) {
      if (finished) return;
      finished = true;
      clearInterval(refresh);
      await syncing.settled();
      if (edits) return edits.finish(tailOf(markdown));
      // The messages replace the draft: the reply's parts not sent yet, as `buffered` splits them.
      const parts = splitMessage(markdown, limit, render);
      while (sentParts < parts.length) await post(parts[sentParts] as string);
    },
  };
}

/** A draft id: any non-zero integer; a new one per message, so one draft never animates into the next. */
function newDraftId(): number {
  return randomInt(1, 2 ** 31 - 1);
}
