import type { AgentEvent } from '../events.js';
import { obj, parseJsonLine } from './parse-helpers.js';

/**
 * Our side of a JSON-RPC conversation over an engine's stdin and stdout (ACP agents, `codex
 * app-server`): requests we send get ids and their replies reach the handler given with them;
 * the engine's own requests (an id and a method) and notifications (a method only) go to the
 * conversation. Each line the engine prints gives the events it means for the turn.
 */
export type RpcMessage = Record<string, unknown>;
export type RpcHandler = (msg: RpcMessage) => AgentEvent[];

export interface RpcPeer {
  /** Send a request; `onReply` gets its reply (a result or an error). */
  request(method: string, params: unknown, onReply: RpcHandler): void;
  /** One line of the engine's output: a reply to one of ours, a request of its own or a notification. Anything else gives nothing. */
  receive(line: string): AgentEvent[];
}

export interface RpcPeerOptions {
  /** Write one message (the transport adds the protocol's envelope fields, if any). */
  send: (msg: RpcMessage) => void;
  onRequest: RpcHandler;
  onNotification: (method: string, params: RpcMessage) => AgentEvent[];
}

export function createRpcPeer(opts: RpcPeerOptions): RpcPeer {
  const pending = new Map<number, RpcHandler>();
  let nextId = 1;
  return {
    request(method, params, onReply) {
      const id = nextId++;
      pending.set(id, onReply);
      opts.send({ id, method, params });
    },
    receive(line) {
      const msg = parseJsonLine(line);
      if (!msg) return [];
      if (typeof msg.method === 'string') {
        if (msg.id !== undefined && msg.id !== null) return opts.onRequest(msg);
        return opts.onNotification(msg.method, obj(msg.params) ?? {});
      }
      const handler = typeof msg.id === 'number' ? pending.get(msg.id) : undefined;
      if (!handler) return [];
      pending.delete(msg.id as number);
      return handler(msg);
    },
  };
}
