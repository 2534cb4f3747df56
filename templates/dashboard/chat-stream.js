// The chat's requests: POST /chat (a turn's StreamEvents, or one JSON object for a slash command),
// POST /command (an engine's own command, streamed like a turn), POST /abort and POST /approve.
import { ApiError, api, readSseData, token } from './api.js';

/**
 * POST a turn and hand each StreamEvent to `onEvent` as it arrives. Resolves with
 * `{command}` when the server answered a slash command (one JSON object), else `{ended}`:
 * true when the stream carried its `completion`, false when it was cut before (the gateway
 * went away); the turn itself may still be running then. HTTP errors throw ApiError.
 */
export async function postTurn(path, body, onEvent) {
  const res = await fetch(path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token.get() ?? ''}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) {
    const answer = await res.json().catch(() => ({}));
    throw new ApiError(answer.error ?? `HTTP ${res.status}`, res.status, answer);
  }
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return { command: await res.json() };
  let ended = false;
  try {
    for await (const data of readSseData(res.body)) {
      let event;
      try {
        event = JSON.parse(data);
      } catch {
        continue; // not one of ours
      }
      if (event.type === 'completion') ended = true;
      onEvent(event);
    }
  } catch {
    // The connection dropped mid-stream: reported as `ended: false`.
  }
  return { ended };
}

/** `/name args` as POST /command's body: the engine's own command on this session. */
export function commandBody(line, sessionKey) {
  const [name = '', ...rest] = line.trim().slice(1).split(/\s+/);
  const args = line
    .trim()
    .slice(1 + name.length)
    .trim();
  return { command: name, ...(rest.length > 0 ? { arguments: args } : {}), sessionKey };
}

/** Stop the key's running turn; true when one was running. */
export async function abortTurn(sessionKey) {
  const r = await api('/abort', { method: 'POST', json: { sessionKey } });
  return r.aborted === true;
}

/** Answer an approval request: `allow`, `deny` or `allow_always`. */
export function answerApproval(sessionKey, id, decision) {
  return api('/approve', { method: 'POST', json: { sessionKey, id, decision } });
}
