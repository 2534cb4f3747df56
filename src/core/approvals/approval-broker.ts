import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { packageRoot } from '../paths.js';
import type { ApprovalAsk, ApprovalVerdict } from './approvals.js';

/**
 * Where an engine's helper process asks for approvals: Claude Code runs our permission-prompt MCP
 * server (`bin/approval-mcp.mjs`), which forwards each request here and waits for the answer.
 *
 * A loopback HTTP endpoint, listening only while some turn has it open (an idle assistant holds no
 * port), with a random secret per turn passed to the helper in its environment: the secret only
 * lets a process *ask* (the answer always comes from the person), and it stops working when its
 * turn ends. `POST /ask` with `Authorization: Bearer <secret>` and `{tool_name, input,
 * tool_use_id?}` answers `{allow, message}` once decided; a helper that disconnects first withdraws
 * its request.
 */
export interface HelperEndpoint {
  /** `http://127.0.0.1:<port>/ask` */
  url: string;
  token: string;
}

export interface ApprovalBroker {
  /** Open an endpoint for one turn; `close` revokes its secret (pending requests are the turn's to deny). */
  open(ask: (request: ApprovalAsk) => Promise<ApprovalVerdict>): Promise<HelperEndpoint & { close(): void }>;
}

/**
 * The helper Claude Code starts as an MCP server: plain JavaScript in `bin/`, so the sources, tsc's
 * output and the bundle all run the same file (found from the package root: the bundle's chunks
 * sit at another depth than this module's source).
 */
export const APPROVAL_HELPER_SCRIPT = path.join(packageRoot(), 'bin', 'approval-mcp.mjs');
/** Its server and tool name, as `--permission-prompt-tool` names it (`mcp__<server>__<tool>`). */
export const APPROVAL_MCP_SERVER = 'service_approvals';
export const APPROVAL_MCP_TOOL = `mcp__${APPROVAL_MCP_SERVER}__ask`;
/** The helper's environment: where to ask, and the turn's secret. */
export const APPROVAL_URL_VAR = 'SERVICE_APPROVAL_URL';
export const APPROVAL_TOKEN_VAR = 'SERVICE_APPROVAL_TOKEN';

/** A Write tool's input carries the whole file; past this the request is denied unseen. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

const askBody = z.object({ tool_name: z.string().min(1).max(500), input: z.unknown(), tool_use_id: z.string().optional() });

type Ask = (request: ApprovalAsk) => Promise<ApprovalVerdict>;

export function createApprovalBroker(): ApprovalBroker {
  /** Open turns by the SHA-256 of their secret (a lookup that leaks nothing about the secret by its timing). */
  const turns = new Map<string, Ask>();
  let listening: Promise<{ server: http.Server; port: number }> | undefined;

  const digest = (token: string) => createHash('sha256').update(token).digest('hex');

  const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const reply = (status: number, body: unknown) => {
      if (res.writableEnded || res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const ask = token ? turns.get(digest(token)) : undefined;
    if (req.method !== 'POST' || req.url !== '/ask') return reply(404, { error: 'not found' });
    if (!ask) return reply(401, { error: 'unknown or expired turn secret' });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return reply(200, { allow: false, message: 'The tool input is too large to show for approval; the call was denied.' });
      let parsed: z.infer<typeof askBody>;
      try {
        parsed = askBody.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        return reply(400, { error: 'expected {tool_name, input}' });
      }
      // The helper closing its connection (Claude Code cancelled the call, or was killed) withdraws the request.
      const gone = new AbortController();
      res.on('close', () => {
        if (!res.writableEnded) gone.abort();
      });
      void ask({ tool: parsed.tool_name, input: parsed.input, signal: gone.signal }).then(
        (verdict) => reply(200, verdict),
        () => reply(200, { allow: false, message: 'The approval failed; the tool call was denied.' }),
      );
    });
  };

  const listen = () => {
    listening ??= new Promise((resolve, reject) => {
      const server = http.createServer(handle);
      // Answers may take minutes (a person deciding): no request or idle timeout of our own.
      server.requestTimeout = 0;
      server.timeout = 0;
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port }));
      server.unref();
    });
    return listening;
  };

  const closeIfIdle = () => {
    if (turns.size > 0 || !listening) return;
    const closing = listening;
    listening = undefined;
    void closing.then(({ server }) => {
      server.close();
      server.closeAllConnections();
    });
  };

  return {
    async open(ask) {
      const token = randomBytes(32).toString('hex');
      const key = digest(token);
      turns.set(key, ask);
      try {
        const { port } = await listen();
        return {
          url: `http://127.0.0.1:${port}/ask`,
          token,
          close() {
            turns.delete(key);
            closeIfIdle();
          },
        };
      } catch (err) {
        turns.delete(key);
        closeIfIdle();
        throw err;
      }
    },
  };
}
