// HTTP API and embedding samples, filled with this gateway's address. The token stays out of
// them ($SERVICE_TOKEN): samples get copied into scripts, tickets and screenshots.
import { $, copyText, el } from './api.js';

function samples({ origin, dir, channel, version }) {
  const q = (s) => JSON.stringify(s);
  // How to depend on the package: it is not on the npm registry (whose `service` is another package).
  const install = `// npm install /path/to/service/agent-service-${version ?? '<version>'}.tgz  (made by \`npm pack\` in the service checkout)
// or: npm install /path/to/service  (a link to the checkout). Not \`npm install service\`: that is an unrelated package.`;
  return [
    {
      id: 'curl-chat',
      title: 'curl: chat (streams Server-Sent Events until the completion event)',
      code: `curl -N -X POST ${q(`${origin}/chat`)} \\
  -H "Authorization: Bearer $SERVICE_TOKEN" \\
  -H "Content-Type: application/json" \\
  -d '{"message":"Hello","sessionKey":"user-42"}'`,
    },
    {
      id: 'curl-send',
      title: 'curl: push a message to an IM channel',
      code: `curl -X POST ${q(`${origin}/api/send`)} \\
  -H "Authorization: Bearer $SERVICE_TOKEN" \\
  -H "Content-Type: application/json" \\
  -d '{"channel":"${channel}","chatId":"CHAT_ID","text":"Deployment finished"}'`,
    },
    {
      id: 'js-sse',
      title: 'JavaScript: stream a reply (fetch + reader) and follow the activity feed (EventSource)',
      code: `const BASE = ${q(origin)};
const TOKEN = process.env.SERVICE_TOKEN;

const res = await fetch(\`\${BASE}/chat\`, {
  method: 'POST',
  headers: { Authorization: \`Bearer \${TOKEN}\`, 'Content-Type': 'application/json' },
  body: JSON.stringify({ message: 'Hello', sessionKey: 'user-42' }),
});
const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
let buffer = '';
for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  buffer += value;
  let cut;
  while ((cut = buffer.indexOf('\\n\\n')) >= 0) {
    const block = buffer.slice(0, cut);
    buffer = buffer.slice(cut + 2);
    if (!block.startsWith('data: ')) continue; // ": heartbeat" comments
    const event = JSON.parse(block.slice(6));
    if (event.type === 'text') process.stdout.write(event.content);
    if (event.type === 'error') console.error(event.message);
    if (event.type === 'completion') console.log('\\n[' + event.status + ']');
  }
}

// In a browser: every processed message, live.
const events = new EventSource(\`\${BASE}/api/events?token=\${encodeURIComponent(TOKEN)}\`);
events.onmessage = (e) => console.log(JSON.parse(e.data));`,
    },
    {
      id: 'embed',
      title: 'Node.js: the same assistant in your own process (the package "agent-service")',
      code: `${install}
import { createAssistant } from 'agent-service';

const bot = createAssistant({ dir: ${q(dir || './my-assistant')} });
for await (const event of bot.chat('Hello', { sessionKey: 'user-42' })) {
  if (event.type === 'text') process.stdout.write(event.content);
  if (event.type === 'completion') console.log('\\n', event.status);
}
await bot.close();`,
    },
    {
      id: 'embed-server',
      title: 'Node.js: this API and dashboard from your own program (startServer; startGateway runs channels and tasks too)',
      code: `${install}
import { createAssistant, startServer } from 'agent-service';

const bot = createAssistant({ dir: ${q(dir || './my-assistant')} });
// port: SERVICE_PORT or 3000; token: SERVICE_TOKEN or the one in .service/gateway-token
const server = await startServer(bot, { port: 3001 });
console.log(server.url);
process.once('SIGTERM', async () => {
  await server.close(); // running turns finish first, as on SIGTERM for the gateway
  await bot.close();
});`,
    },
  ];
}

export function renderSamples(status) {
  const connected = (status.channels ?? []).find((c) => c.status === 'connected');
  const list = samples({ origin: location.origin, dir: status.dir, channel: connected?.type ?? 'channel_a', version: status.version });
  $('samples').replaceChildren(
    ...list.map((s) => {
      const code = el('code', { text: s.code });
      const note = el('span', { class: 'muted copy-note', attrs: { 'aria-live': 'polite' } });
      const button = el('button', {
        class: 'secondary',
        text: 'Copy',
        attrs: { type: 'button', 'data-copy': s.id },
        on: {
          click: async () => {
            const ok = await copyText(s.code);
            note.textContent = ok ? 'copied' : 'copy failed: select the text';
            if (!ok) getSelection()?.selectAllChildren(code);
            setTimeout(() => (note.textContent = ''), 2_000);
          },
        },
      });
      return el('div', { class: 'sample', attrs: { 'data-sample': s.id } }, [
        el('div', { class: 'row' }, [el('h3', { text: s.title }), el('span', {}, [note, button])]),
        el('pre', {}, [code]),
      ]);
    }),
  );
}
