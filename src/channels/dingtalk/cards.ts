import { randomUUID } from 'node:crypto';
import type { ReplyStream, ReplyTarget } from '../types.js';
import { ChannelError } from '../types.js';
import { renderDingtalkMarkdown } from './format.js';
import type { DingtalkApi, Json } from './openapi.js';

/**
 * Cards through the card OpenAPI: one created and delivered into a chat (createAndDeliver), and on
 * it the AI card that streams a reply. The approval card (approval.ts) is delivered the same way.
 */

/** DingTalk's built-in "AI card" template (Markdown body `msgContent`, status `flowStatus`). */
const AI_CARD_TEMPLATE = '382e4302-551d-4880-bf29-a30acfab2e71.schema';
const FLOW = { processing: '1', inputting: '2', finished: '3' } as const;

/**
 * Creates a card from a template and delivers it to the chat of `to`. With `callbackType: 'STREAM'`
 * a press on the card's buttons comes back over the stream connection (topic
 * /v1.0/card/instances/callback); without it, DingTalk sends no callback there.
 */
export async function deliverCard(
  api: DingtalkApi,
  channel: string,
  to: ReplyTarget,
  card: { templateId: string; outTrackId: string; params: Json; robotCode: string; callbackType?: 'STREAM' },
): Promise<void> {
  const group = to.chatType === 'group';
  const created = await api.call('POST', '/v1.0/card/instances/createAndDeliver', {
    cardTemplateId: card.templateId,
    outTrackId: card.outTrackId,
    ...(card.callbackType ? { callbackType: card.callbackType } : {}),
    userIdType: 1,
    cardData: { cardParamMap: card.params },
    // As the official Python SDK sends it: both space models, the deliver model of the target.
    openSpaceId: `dtv1.card//${group ? 'IM_GROUP' : 'IM_ROBOT'}.${to.chatId}`,
    imGroupOpenSpaceModel: { supportForward: true },
    imRobotOpenSpaceModel: { supportForward: true },
    ...(group ? { imGroupOpenDeliverModel: { robotCode: card.robotCode } } : { imRobotOpenDeliverModel: { spaceType: 'IM_ROBOT' } }),
  });
  // createAndDeliver answers 200 even when delivery failed; the per-space results say so.
  const results = ((created.result as Json | undefined)?.deliverResults ?? []) as Array<{ success?: boolean; errorMsg?: string }>;
  if (results.length > 0 && results.every((r) => r.success !== true)) {
    throw new ChannelError(channel, 'other', `card not delivered: ${results.map((r) => r.errorMsg ?? 'unknown').join('; ')}`);
  }
}

/** An AI card that is created, delivered, then streamed into (full text each time). */
export async function openAiCard(api: DingtalkApi, channel: string, to: ReplyTarget, robotCode: string): Promise<ReplyStream> {
  const outTrackId = randomUUID();
  await deliverCard(api, channel, to, {
    templateId: AI_CARD_TEMPLATE,
    outTrackId,
    robotCode,
    params: { flowStatus: FLOW.processing, msgContent: '' },
    callbackType: 'STREAM',
  });
  const setStatus = (cardParamMap: Json) =>
    api.call('PUT', '/v1.0/card/instances', { outTrackId, cardData: { cardParamMap }, cardUpdateOptions: { updateCardDataByKey: true } });
  let inputting = false;
  let closed = false;
  let shown = '';
  let chain: Promise<unknown> = Promise.resolve();
  // Updates are serialised so that a slow PUT can never overwrite a newer text.
  const serial = (fn: () => Promise<void>): Promise<void> => {
    const run = chain.then(fn);
    chain = run.catch(() => undefined);
    return run;
  };
  const put = async (text: string, final: boolean) => {
    if (!inputting) {
      await setStatus({ flowStatus: FLOW.inputting });
      inputting = true;
    }
    await api.call('PUT', '/v1.0/card/streaming', {
      outTrackId,
      guid: randomUUID(),
      key: 'msgContent',
      content: text,
      isFull: true,
      isFinalize: final,
      isError: false,
    });
    shown = text;
  };
  return {
    update: (markdown) =>
      serial(async () => {
        const text = renderDingtalkMarkdown(markdown);
        if (closed || text === shown) return;
        await put(text, false);
      }),
    finish: (markdown) =>
      serial(async () => {
        if (closed) return;
        closed = true;
        const text = renderDingtalkMarkdown(markdown);
        await put(text, true);
        await setStatus({ flowStatus: FLOW.finished, msgContent: text });
      }),
  };
}
