// A complete custom channel adapter, as a small working example of the adapter interface
// (src/channels/types.ts). It "chats" through folders: each JSON file dropped into the inbox folder
// is a message, every reply is appended as one JSON line to <outbox>/<chatId>.jsonl.
//
// service.yaml:
//   channels:
//     folder:
//       _adapter: ./folder-adapter.mjs   # a path relative to the assistant directory, or a package name
//       inbox: chat/inbox                # the other fields are passed to createAdapter as `options`
//       outbox: chat/outbox
//
// A message file: {"id": "m1", "chatId": "room-1", "chatType": "group", "userId": "ada",
//                  "userName": "Ada", "text": "hello", "mentioned": true}
import fs from 'node:fs';
import path from 'node:path';

/**
 * @param {Record<string, unknown>} options the adapter's block from service.yaml (without _adapter)
 * @param {{ log: { info(m: string): void; warn(m: string): void }, dir: string, name: string }} deps
 */
export function createAdapter(options, { log, dir, name }) {
  const inbox = path.resolve(dir, String(options.inbox ?? 'chat/inbox'));
  const outbox = path.resolve(dir, String(options.outbox ?? 'chat/outbox'));
  const pollMs = Number(options.pollMs ?? 200);
  let timer;
  let seq = 0;

  const write = (chatId, text, replyTo) => {
    const messageId = `${name}-${Date.now()}-${++seq}`;
    fs.appendFileSync(
      path.join(outbox, `${chatId.replace(/[^\w.-]/g, '_')}.jsonl`),
      `${JSON.stringify({ messageId, chatId, replyTo, text, at: new Date().toISOString() })}\n`,
    );
    return { chatId, messageId };
  };

  return {
    name,
    // The bridge splits longer replies into several messages before calling reply().
    limit: { max: Number(options.maxLength ?? 4000), unit: 'chars' },
    // Markdown goes out as it is; a platform adapter would convert it to the platform's flavour here.
    render: (markdown) => markdown,

    async start(ctx) {
      fs.mkdirSync(inbox, { recursive: true });
      fs.mkdirSync(outbox, { recursive: true });
      const poll = async () => {
        for (const file of fs
          .readdirSync(inbox)
          .filter((f) => f.endsWith('.json'))
          .sort()) {
          const full = path.join(inbox, file);
          let m;
          try {
            m = JSON.parse(fs.readFileSync(full, 'utf8'));
          } catch (err) {
            log.warn(`${file}: not a JSON message (${err.message})`);
            fs.renameSync(full, `${full}.bad`);
            continue;
          }
          const chatType = m.chatType === 'group' ? 'group' : 'direct';
          const chatId = String(m.chatId ?? m.userId);
          // Hand the message over, then "acknowledge" it (here: rename the file).
          await ctx.onMessage({
            channel: name,
            messageId: String(m.id ?? file),
            chatId,
            chatType,
            senderId: String(m.userId ?? 'someone'),
            ...(m.userName ? { senderName: String(m.userName) } : {}),
            text: String(m.text ?? ''),
            mentioned: chatType === 'direct' || m.mentioned === true,
            ts: Date.now(),
            replyTarget: { chatId, chatType, messageId: String(m.id ?? file) },
          });
          fs.renameSync(full, `${full}.done`);
        }
      };
      timer = setInterval(() => void poll().catch((err) => log.warn(`poll: ${err.message}`)), pollMs);
      log.info(`watching ${inbox}`);
    },

    async reply(to, markdown) {
      return write(to.chatId, markdown, to.messageId);
    },

    // Optional capability: proactive messages (POST /api/send, scheduled tasks).
    async send(chatId, markdown) {
      return write(chatId, markdown);
    },

    async stop() {
      clearInterval(timer);
    },
  };
}
