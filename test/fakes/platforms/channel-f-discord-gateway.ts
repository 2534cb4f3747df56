/**
 * The fake Discord gateway: the websocket half of channel-f-discord.ts. It speaks gateway v10 JSON
 * (no compression) the way @discordjs/ws 1.2.3 expects it: op 10 Hello, op 2 Identify → READY then
 * one GUILD_CREATE per guild, op 1 Heartbeat → op 11, op 6 Resume → replay + RESUMED (or op 9
 * when the session is gone), and the documented close codes (4001-4013).
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { BOT_ID, GUILD_ID, INTENT, CHANNEL_TYPE, type FakeChannel, type FakeDiscordWorld, type StoredMessage } from './channel-f-discord-state.js';

type Json = Record<string, unknown>;

interface Session {
  id: string;
  intents: number;
  seq: number;
  ackedThrough: number;
  buffer: Array<{ s: number; t: string; d: Json; messageId?: string }>;
  socket?: WebSocket;
  /** False after invalidateSessions(): the live socket keeps working, a resume gets op 9. */
  resumable: boolean;
}

export interface GatewayOptions {
  world: FakeDiscordWorld;
  token: string;
  heartbeatIntervalMs: number;
  isRefused(): boolean;
  resumeUrl(): string;
  onAck(messageId: string): void;
}

export interface GatewayRecord {
  identifies: Array<{ intents: number; ok: boolean; at: number }>;
  resumes: Array<{ sessionId: string; seq: number; ok: boolean; replayed: number; at: number }>;
  connections: Array<{ path: string; query: string; at: number }>;
  heartbeats: number;
}

const REPLAY_LIMIT = 500;

/** MESSAGE_CREATE/UPDATE data for one session: intent filtering and the MessageContent rule. */
export function gatewayMessage(world: FakeDiscordWorld, m: StoredMessage, intents: number): Json | null {
  const dm = m.channel.type === CHANNEL_TYPE.DM;
  if (!(intents & (dm ? INTENT.DirectMessages : INTENT.GuildMessages))) return null;
  const d: Json = { ...m.payload, channel_type: m.channel.type };
  if (!dm) {
    const author = world.users.get(String((m.payload.author as Json).id));
    if (author) d.member = world.memberPayload(author, false);
  }
  // Without the privileged MessageContent intent Discord blanks content, embeds, attachments and
  // components, except in DMs, when the bot is mentioned, and on the bot's own messages.
  if (!dm && !m.mentionsBot && !m.fromBot && !(intents & INTENT.MessageContent)) {
    Object.assign(d, { content: '', embeds: [], attachments: [], components: [] });
  }
  return d;
}

export function createGateway(opts: GatewayOptions) {
  const wss = new WebSocketServer({ noServer: true });
  const sessions = new Map<string, Session>();
  const sockets = new Set<WebSocket>();
  const events = new EventEmitter();
  const record: GatewayRecord = { identifies: [], resumes: [], connections: [], heartbeats: 0 };

  function raw(ws: WebSocket, payload: Json): Promise<void> {
    if (ws.readyState !== WebSocket.OPEN) return Promise.resolve();
    return new Promise((resolve) => ws.send(JSON.stringify(payload), () => resolve()));
  }

  /** Sequences an event on one session, keeps it for resume replay, and sends it if a socket is attached. */
  function emit(s: Session, t: string, d: Json, messageId?: string): Promise<void> {
    const entry = { s: ++s.seq, t, d, ...(messageId ? { messageId } : {}) };
    s.buffer.push(entry);
    if (s.buffer.length > REPLAY_LIMIT) s.buffer.shift();
    return s.socket ? raw(s.socket, { op: 0, t, s: entry.s, d }) : Promise.resolve();
  }

  function ack(s: Session, seq: unknown): void {
    if (typeof seq !== 'number' || seq <= s.ackedThrough) return;
    for (const e of s.buffer) if (e.s > s.ackedThrough && e.s <= seq && e.messageId) opts.onAck(e.messageId);
    s.ackedThrough = seq;
  }

  function readyPayload(s: Session): Json {
    return {
      v: 10,
      user: { ...opts.world.userPayload(opts.world.botUser()), verified: true, mfa_enabled: false, email: null },
      guilds: [{ id: GUILD_ID, unavailable: true }],
      session_id: s.id,
      session_type: 'normal',
      resume_gateway_url: opts.resumeUrl(),
      shard: [0, 1],
      private_channels: [],
      presences: [],
      relationships: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: [],
      user_settings: {},
      application: { id: BOT_ID, flags: 1 << 19 },
      _trace: ['["fake-discord-gateway",{"micros":0}]'],
    };
  }

  function identify(ws: WebSocket, d: Json): Session | undefined {
    const intents = d.intents;
    if (opts.isRefused() || d.token !== opts.token) {
      record.identifies.push({ intents: Number(intents), ok: false, at: Date.now() });
      ws.close(4004, 'Authentication failed.');
      return undefined;
    }
    if (typeof intents !== 'number' || !Number.isInteger(intents) || intents < 0) {
      ws.close(4013, 'Invalid intent(s).');
      return undefined;
    }
    record.identifies.push({ intents, ok: true, at: Date.now() });
    const s: Session = { id: randomBytes(16).toString('hex'), intents, seq: 0, ackedThrough: 0, buffer: [], socket: ws, resumable: true };
    sessions.set(s.id, s);
    void emit(s, 'READY', readyPayload(s));
    // discord.js waits waitGuildTimeout (15 s) for every guild listed unavailable in READY.
    if (intents & INTENT.Guilds) void emit(s, 'GUILD_CREATE', opts.world.guildCreatePayload());
    events.emit('change');
    return s;
  }

  function resume(ws: WebSocket, d: Json): Session | undefined {
    const sessionId = String(d.session_id);
    const seq = typeof d.seq === 'number' ? d.seq : 0;
    if (opts.isRefused() || d.token !== opts.token) {
      record.resumes.push({ sessionId, seq, ok: false, replayed: 0, at: Date.now() });
      ws.close(4004, 'Authentication failed.');
      return undefined;
    }
    const s = sessions.get(sessionId);
    if (!s?.resumable || seq > s.seq) {
      record.resumes.push({ sessionId, seq, ok: false, replayed: 0, at: Date.now() });
      void raw(ws, { op: 9, d: false, s: null, t: null });
      return undefined;
    }
    if (s.socket && s.socket !== ws) s.socket.close(4000, 'Session resumed elsewhere.');
    s.socket = ws;
    const missed = s.buffer.filter((e) => e.s > seq);
    record.resumes.push({ sessionId, seq, ok: true, replayed: missed.length, at: Date.now() });
    for (const e of missed) void raw(ws, { op: 0, t: e.t, s: e.s, d: e.d });
    ack(s, seq);
    void emit(s, 'RESUMED', { _trace: ['["fake-discord-gateway",{"micros":0}]'] });
    events.emit('change');
    return s;
  }

  function onConnection(ws: WebSocket, req: IncomingMessage): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    record.connections.push({ path: url.pathname, query: url.search, at: Date.now() });
    sockets.add(ws);
    let session: Session | undefined;
    ws.on('close', (code) => {
      sockets.delete(ws);
      if (session?.socket !== ws) return;
      session.socket = undefined;
      // A client closing with 1000/1001 ends its session; any other code keeps it resumable.
      if (code === 1000 || code === 1001 || !session.resumable) sessions.delete(session.id);
      events.emit('change');
    });
    ws.on('error', () => ws.terminate());
    if (url.searchParams.get('v') !== '10') return void ws.close(4012, 'Invalid API version.');
    if ((url.searchParams.get('encoding') ?? 'json') !== 'json' || url.searchParams.has('compress')) {
      return void ws.close(4002, 'Error while decoding payload.');
    }
    void raw(ws, { op: 10, d: { heartbeat_interval: opts.heartbeatIntervalMs, _trace: ['["fake-discord-gateway",{"micros":0}]'] }, s: null, t: null });
    ws.on('message', (data, isBinary) => {
      let p: { op?: unknown; d?: unknown };
      try {
        p = JSON.parse(isBinary ? '' : String(data)) as typeof p;
      } catch {
        return void ws.close(4002, 'Error while decoding payload.');
      }
      const d = (p.d ?? {}) as Json;
      switch (p.op) {
        case 1:
          record.heartbeats++;
          if (session) ack(session, p.d);
          return void raw(ws, { op: 11, d: null, s: null, t: null });
        case 2:
        case 6:
          if (session) return void ws.close(4005, 'Already authenticated.');
          session = p.op === 2 ? identify(ws, d) : resume(ws, d);
          return;
        case 3:
        case 4:
        case 8:
        case 14:
        case 31:
        case 37:
          if (!session) ws.close(4003, 'Not authenticated.');
          return; // presence, voice, member requests...: accepted and ignored
        default:
          return void ws.close(4001, 'Unknown opcode.');
      }
    });
  }

  /** Sends an event to every resumable session (buffered for replay when its socket is down). */
  async function dispatch(t: string, build: (intents: number) => Json | null, messageId?: string): Promise<number> {
    const sends: Array<Promise<void>> = [];
    for (const s of sessions.values()) {
      const d = build(s.intents);
      if (d) sends.push(emit(s, t, d, messageId));
    }
    await Promise.all(sends);
    return sends.length;
  }

  function liveSessions(): Session[] {
    return [...sessions.values()].filter((s) => s.socket?.readyState === WebSocket.OPEN);
  }

  return {
    record,
    handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
      wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, req));
    },
    connected: () => liveSessions().length > 0,
    onChange(listener: () => void): () => void {
      events.on('change', listener);
      return () => events.off('change', listener);
    },
    dispatch,
    announceChannel(c: FakeChannel): Promise<number> {
      const t = c.type === CHANNEL_TYPE.PublicThread ? 'THREAD_CREATE' : 'CHANNEL_CREATE';
      const d = { ...opts.world.channelPayload(c), ...(t === 'THREAD_CREATE' ? { newly_created: true } : {}) };
      return dispatch(t, (intents) => (intents & INTENT.Guilds ? d : null));
    },
    /** Closes live sockets with 4000 (unknown error): the client keeps its session and resumes. */
    drop(): void {
      for (const s of liveSessions()) {
        const ws = s.socket!;
        s.socket = undefined;
        if (!s.resumable) sessions.delete(s.id);
        ws.close(4000, 'Unknown error.');
      }
      events.emit('change');
    },
    /** op 7: the client closes with 4200 itself and resumes. */
    requestReconnect(): void {
      for (const s of liveSessions()) void raw(s.socket!, { op: 7, d: null, s: null, t: null });
    },
    invalidateSessions(): void {
      for (const [id, s] of sessions) {
        s.resumable = false;
        if (!s.socket) sessions.delete(id);
      }
    },
    async close(): Promise<void> {
      for (const ws of sockets) ws.terminate();
      sessions.clear();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

export type FakeDiscordGateway = ReturnType<typeof createGateway>;
