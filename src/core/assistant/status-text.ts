import type { AssistantStatus } from './assistant.js';

/** The text of `/status`: the assistant, its engine and model, the session of the key, the turns. */
export function formatStatusText(s: AssistantStatus, session: { sessionId: string | null; engine: string } | undefined, key: string, busy: boolean): string {
  return [
    `${s.name} on ${s.engine}${s.model ? ` (${s.model})` : ''}, version ${s.version}`,
    `Session "${key}": ${session?.sessionId ? `engine session ${session.sessionId}${session.engine !== s.engine ? ` (from ${session.engine}, will not be resumed)` : ''}` : 'new'}${busy ? ', a turn is running' : ''}`,
    `Turns: ${s.running} running, ${s.waiting} waiting; up ${Math.round(s.uptime / 1000)} s`,
  ].join('\n');
}
