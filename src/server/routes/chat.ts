import { z } from 'zod';
import { isSlashCommand } from '../../core/commands/command-table.js';
import type { RouteTable, ServerDeps } from '../types.js';
import { readValidated } from '../body.js';
import { httpError, jsonReply } from '../http.js';
import { streamJson } from '../sse.js';
import { withFileUrls } from './files.js';

export const sessionKey = z.string().min(1).max(256);

const image = z.strictObject({
  mimeType: z.string().min(1).max(100).optional(),
  data: z.string().min(1),
  fileName: z.string().max(255).optional(),
});

const file = z.strictObject({
  name: z.string().min(1).max(255),
  data: z.string().min(1),
  mimeType: z.string().min(1).max(100).optional(),
});

const chatBody = z.strictObject({
  message: z.string().max(200_000).optional(),
  sessionKey: sessionKey.optional(),
  images: z.array(image).optional(),
  files: z.array(file).optional(),
});

const commandBody = z.strictObject({
  command: z.string().trim().min(1).max(200),
  arguments: z.string().max(200_000).optional(),
  sessionKey: sessionKey.optional(),
});

/**
 * POST /chat and POST /command. Both stream the spec's StreamEvents; failures (busy, queue full,
 * timeout) arrive as in-stream `error` events with HTTP 200. A `/…` message answers the slash
 * command as one JSON object. A client that disconnects does not stop its turn.
 */
export function registerChatRoutes(table: RouteTable, deps: ServerDeps): void {
  const heartbeatMs = deps.heartbeatMs ?? 15_000;
  const log = deps.log.child('http');

  table.add('POST', '/chat', async (event) => {
    const body = await readValidated(event, chatBody, { limit: deps.maxBodyBytes });
    const message = body.message ?? '';
    if (message.trim() === '' && !body.images?.length && !body.files?.length) throw httpError(400, 'message, images or files is required');
    const key = body.sessionKey ?? 'default';
    if (isSlashCommand(message)) {
      return jsonReply(200, await deps.assistant.runCommand(message, { sessionKey: key, allowConfigChanges: true, source: 'http', sender: 'http' }));
    }
    const turn = deps.assistant.chat(message, {
      sessionKey: key,
      ...(body.images ? { images: body.images } : {}),
      ...(body.files ? { files: body.files } : {}),
      source: 'http',
      sender: 'http',
    });
    // The headers go out now (sse.ts): a queued turn's first event can be minutes away.
    return streamJson(event, withFileUrls(turn, deps.token), {
      heartbeatMs,
      redact: table.redact,
      track: table.trackStream,
      onClientGone: () => log.debug(`client left /chat on "${key}"; the turn goes on`),
    });
  });

  table.add('POST', '/command', async (event) => {
    const body = await readValidated(event, commandBody, { limit: deps.maxBodyBytes });
    const name = body.command.replace(/^\//, '');
    refuseOwnCommand(deps, name, body.arguments);
    const turn = deps.assistant.command(name, body.arguments, { sessionKey: body.sessionKey ?? 'default', source: 'http', sender: 'http' });
    return streamJson(event, withFileUrls(turn, deps.token), { heartbeatMs, redact: table.redact, track: table.trackStream });
  });
}

// --- internal ---

/**
 * POST /command is for the engine's own commands; a slash command of ours sent there would
 * otherwise fail as a turn (or reach the engine) and show up as an escalation. It is refused
 * with the request that does what the client meant.
 */
function refuseOwnCommand(deps: ServerDeps, name: string, args: string | undefined): void {
  const word = (name.split(/\s+/)[0] ?? '').toLowerCase();
  if (!deps.commands.list().some((c) => c.name === word)) return;
  const line = `/${[name, args].filter(Boolean).join(' ')}`;
  throw httpError(
    400,
    `/${word} is a slash command of this service, not a native engine command: send it as a message to POST /chat (${JSON.stringify({ message: line })})`,
    { command: word, chat: { message: line } },
  );
}
