import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { errorMessage } from '../core/errors.js';

/**
 * `service gateway --tunnel`: a public URL for the local server through listhen's tunnel support,
 * untun (a Cloudflare quick tunnel run by the cloudflared binary, which untun downloads into the
 * temp directory on first use). Opened after the server listens and separately from listhen's
 * `listen({tunnel})`: there a tunnel that cannot open (offline) fails the whole listen after the
 * port is bound, and the gateway must go on serving locally instead. Loaded only with --tunnel.
 */
export interface Tunnel {
  url: string;
  close(): Promise<void>;
}

/** A tunnel on its way: its URL once open (or why it could not open), and a close that also stops one still opening. */
export interface OpeningTunnel {
  url: Promise<string>;
  close(): Promise<void>;
}

/** untun's own messages (starting, Cloudflare's terms when it downloads cloudflared), one line each. */
export type TunnelNotice = (line: string) => void;

export function startTunnel(localUrl: string, notice: TunnelNotice): OpeningTunnel {
  let closed = false;
  const opened = openTunnel(localUrl, notice).then(async (t) => {
    if (!closed) return t;
    await t.close();
    throw new Error('the gateway stopped before the tunnel opened');
  });
  const url = opened.then((t) => t.url);
  url.catch(() => undefined); // the caller reads the reason from `url`
  return {
    url,
    async close() {
      closed = true;
      const t = await opened.catch(() => undefined);
      await t?.close();
    },
  };
}

/** How long cloudflared may take to report its URL before the tunnel counts as failed. */
const URL_DEADLINE_MS = 60_000;
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export async function openTunnel(localUrl: string, notice: TunnelNotice): Promise<Tunnel> {
  const { startTunnel } = await import('untun');
  ignoreUntunRejections();
  const restoreConsole = routeUntunConsole(notice);
  // untun 0.2 installs SIGINT/SIGTERM/SIGHUP handlers that stop cloudflared and then exit the
  // process at once, which would cut the gateway's graceful shutdown short: they are taken off
  // again, and the gateway closes the tunnel in its own shutdown order.
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  let tunnel: Awaited<ReturnType<typeof startTunnel>>;
  try {
    tunnel = await startTunnel({ url: localUrl, verifyTLS: false, acceptCloudflareNotice: true });
  } finally {
    restoreConsole();
    for (const s of SIGNALS) for (const l of process.listeners(s)) if (!before.get(s)?.has(l)) process.off(s, l);
  }
  if (!tunnel) throw new Error('cloudflared was not installed');
  const opened = tunnel;
  let timer: NodeJS.Timeout | undefined;
  try {
    const url = await Promise.race([
      opened.getURL(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`cloudflared gave no URL within ${URL_DEADLINE_MS / 1000} s`)), URL_DEADLINE_MS);
      }),
    ]);
    return { url, close: () => opened.close() };
  } catch (err) {
    await opened.close().catch(() => undefined);
    throw new Error(oneLine(errorMessage(err)));
  } finally {
    clearTimeout(timer);
  }
}

// --- internal ---

/**
 * untun 0.2 prints with console.log, in colour whatever stdout is: on the gateway's stdout those
 * lines broke `--log-format json` (one JSON object per line) and put escape codes in log files.
 * While it starts, console.log calls made from untun's code go to `notice` as one plain line each
 * (Cloudflare's terms, six lines with symbols, become one); anyone else's go on as before.
 */
function routeUntunConsole(notice: TunnelNotice): () => void {
  const original = console.log;
  console.log = (...args: unknown[]) => {
    if (!new Error().stack?.includes(`${path.sep}untun${path.sep}`)) return original.apply(console, args);
    const line = plainLine(args.map(String).join(' '));
    if (line) notice(line);
  };
  return () => {
    console.log = original;
  };
}

/** Escape codes, decoration (emoji, arrows) at line starts and runs of spaces taken out; the lines joined. */
function plainLine(text: string): string {
  return stripVTControlCharacters(text)
    .split('\n')
    .map((l) =>
      l
        .replace(/^[^\p{L}\p{N}]+/u, '')
        .replace(/\s+/g, ' ')
        .trim(),
    )
    .filter(Boolean)
    .join(' ');
}

let ignoring = false;

/**
 * untun 0.2.2 keeps a promise per tunnel connection that it rejects, with no handler attached,
 * when cloudflared exits before that connection registered (offline, or stopped early): an
 * unhandled rejection, which would end the gateway. Those rejections are its own report of what
 * getURL() already told us; any other unhandled rejection is thrown on, ending the process as
 * Node does without a handler.
 */
function ignoreUntunRejections(): void {
  if (ignoring) return;
  ignoring = true;
  process.on('unhandledRejection', (reason) => {
    if (reason instanceof Error && reason.message.startsWith('cloudflared exited')) return;
    throw reason;
  });
}

/** cloudflared's last words (untun appends them to its error) as one line: the reason is in them. */
function oneLine(message: string): string {
  const lines = message
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const reason = [...lines].reverse().find((l) => /\b(ERR|error|failed)\b/i.test(l) && !l.startsWith('cloudflared exited'));
  return reason && reason !== lines[0] ? `${lines[0]}: ${reason}` : (lines[0] ?? message);
}
