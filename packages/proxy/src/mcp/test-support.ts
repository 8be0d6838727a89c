// Real MCP peers for the MCP gateway's tests: the reference servers from npm over stdio
// (server-everything, server-memory), a streamable-HTTP server built with the SDK on port 0 (its
// tools can be made to hang or to ask the client for sampling), and SDK clients over each transport.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '@gw/api';
import { eventually } from '@gw/testkit';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { type CreateMessageResult, CreateMessageResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { request as undiciRequest } from 'undici';
import { z } from 'zod';
import { SseParser } from './sse.ts';

const require = createRequire(import.meta.url);
const pkgDir = (name: string) => dirname(require.resolve(`${name}/package.json`));

/** `node <server-everything>` speaking stdio. */
export const EVERYTHING = {
  cmd: process.execPath,
  args: [join(pkgDir('@modelcontextprotocol/server-everything'), 'dist/index.js'), 'stdio'],
};
/** `node <server-memory>` speaking stdio (set MEMORY_FILE_PATH to a temp file). */
export const MEMORY = {
  cmd: process.execPath,
  args: [join(pkgDir('@modelcontextprotocol/server-memory'), 'dist/index.js')],
};

/**
 * server-everything speaking streamable HTTP at /mcp, on a port of its own (PORT=0: the preloaded
 * testdata/report-port.ts says which it got).
 */
export async function startEverythingHttp(): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      pathToFileURL(join(import.meta.dirname, 'testdata/report-port.ts')).href,
      join(pkgDir('@modelcontextprotocol/server-everything'), 'dist/index.js'),
      'streamableHttp',
    ],
    { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not listen:\n${stderr}`)), 20_000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const m = /gw-test-listening (\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything exited (${code}):\n${stderr}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface HttpPeer {
  url: string;
  port: number;
  /** Sessions the server has open (one per gateway session). */
  sessions: Map<string, StreamableHTTPServerTransport>;
  /** Calls of the `slow` tool that are still running. */
  hanging: number;
  /** Requests it received, by method. */
  seen: string[];
  /** Every request to /mcp: its HTTP method, JSON-RPC method (a POST's) and headers. */
  requests: PeerRequest[];
  close(): Promise<void>;
}

export interface PeerRequest {
  http: string;
  rpc: string | undefined;
  headers: IncomingHttpHeaders;
}

/** The tools, prompts and resources of the SDK test server (`weather`, `slow`, `ask`, `notes://…`). */
function buildServer(peer: { hanging: number; seen: string[] }, prefix: string): McpServer {
  const s = new McpServer({ name: `${prefix}-server`, version: '1.0.0' }, { capabilities: { logging: {} } });
  s.registerTool(
    'weather',
    { description: 'The weather in a city', inputSchema: { city: z.string() } },
    async ({ city }) => ({ content: [{ type: 'text', text: `${prefix}: sunny in ${city}` }] }),
  );
  s.registerTool(
    'echo',
    { description: 'Echoes', inputSchema: { message: z.string() } },
    async ({ message }) => ({
      content: [{ type: 'text', text: `${prefix} echo: ${message}` }],
    }),
  );
  s.registerTool('slow', { description: 'Never answers until cancelled' }, async (extra) => {
    peer.hanging++;
    await new Promise<void>((resolve) => {
      if (extra.signal.aborted) resolve();
      extra.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    peer.hanging--;
    return { content: [{ type: 'text', text: 'cancelled' }] };
  });
  s.registerTool('progress', { description: 'Reports progress three times, then answers' }, async (extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= 3; i++) {
      if (token !== undefined)
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: i, total: 3 },
        });
    }
    return { content: [{ type: 'text', text: 'done' }] };
  });
  s.registerTool('ask', { description: 'Asks the client to sample' }, async (extra) => {
    const r = (await extra.sendRequest(
      {
        method: 'sampling/createMessage',
        params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi?' } }], maxTokens: 10 },
      },
      CreateMessageResultSchema,
    )) as CreateMessageResult;
    const text = r.content.type === 'text' ? r.content.text : '?';
    return { content: [{ type: 'text', text: `client said: ${text}` }] };
  });
  s.registerPrompt('greet', { description: 'A greeting', argsSchema: { who: z.string() } }, ({ who }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `${prefix} says hello to ${who}` } }],
  }));
  for (let i = 0; i < 3; i++) {
    s.registerResource(`note${i}`, `notes://${prefix}/${i}`, { mimeType: 'text/plain' }, async (uri) => ({
      contents: [{ uri: uri.href, text: `${prefix} note ${i}` }],
    }));
  }
  return s;
}

/**
 * A streamable-HTTP MCP server (stateful, SDK) on 127.0.0.1:0, with the legacy SSE transport at /sse.
 * `require`: headers every request must carry (else 401, as a server with an API key answers).
 */
export async function startHttpPeer(prefix = 'web', require?: Record<string, string>): Promise<HttpPeer> {
  const peer = { hanging: 0, seen: [] as string[] };
  const requests: PeerRequest[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const legacy = new Map<string, SSEServerTransport>();
  const server: Server = createServer(async (req, res) => {
    if (require && Object.entries(require).some(([k, v]) => req.headers[k] !== v)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/sse' && req.method === 'GET') {
      const t = new SSEServerTransport('/messages', res);
      legacy.set(t.sessionId, t);
      res.on('close', () => legacy.delete(t.sessionId));
      await buildServer(peer, prefix).connect(t);
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const t = legacy.get(url.searchParams.get('sessionId') ?? '');
      if (!t) {
        res.writeHead(404).end();
        return;
      }
      await t.handlePostMessage(req, res);
      return;
    }
    if (url.pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    let body: unknown;
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const m = body as { method?: string };
      if (m.method) peer.seen.push(m.method);
    }
    requests.push({
      http: req.method ?? '',
      rpc: (body as { method?: string } | undefined)?.method,
      headers: req.headers,
    });
    const sid = req.headers['mcp-session-id'];
    let t = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (!t) {
      if (typeof sid === 'string' || (body as { method?: string })?.method !== 'initialize') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }),
        );
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, created);
        },
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await buildServer(peer, prefix).connect(created);
      t = created;
    }
    await t.handleRequest(req, res, body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    sessions,
    get hanging() {
      return peer.hanging;
    },
    seen: peer.seen,
    requests,
    close: async () => {
      for (const t of sessions.values()) await t.close().catch(() => {});
      for (const t of legacy.values()) await t.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** An HTTP server on 127.0.0.1:0 answering with `handle` (a hand-written peer). */
export async function startRawHttp(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A TCP listener that accepts and never answers: a hanging target. */
export function startBlackHole(): Promise<{ port: number; close(): Promise<void> }> {
  return startRawHttp(() => {});
}

/** Asserts that loading `text` fails with a ConfigError whose message matches `re`. */
export function assertConfigRejects(load: (text: string) => unknown, text: string, re: RegExp): void {
  assert.throws(
    () => load(text),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, String(err));
      assert.match(err.message, re);
      return true;
    },
  );
}

export type ClientTransportKind = 'streamable-http' | 'sse';

/** An SDK client connected to the gateway over the given transport. */
export async function connectClient(
  url: string,
  kind: ClientTransportKind = 'streamable-http',
  capabilities: Record<string, unknown> = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport | SSEClientTransport }> {
  const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities });
  const transport =
    kind === 'sse' ? new SSEClientTransport(new URL(url)) : new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport };
}

/** The text of a tool result's first content item. */
/** A JSON-RPC message POSTed as a streamable-HTTP client of session `sid` sends it (fetch's answer). */
export function postInSession(url: string, sid: string, message: unknown): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sid,
    },
    body: JSON.stringify(message),
  });
}

export function textOf(r: unknown): string {
  const c = (r as { content?: { type: string; text?: string }[] }).content?.[0];
  return c?.type === 'text' ? (c.text ?? '') : '';
}

/** Shared with other tests (@gw/testkit). */
export { eventually };

/** A raw legacy SSE stream at `url`: its events as `<event> <data>`, its endpoint, and a way to close it. */
export async function openLegacyStream(
  url: string,
): Promise<{ events: string[]; endpoint: string; close(): void }> {
  const ac = new AbortController();
  const stream = await undiciRequest(url, { headers: { accept: 'text/event-stream' }, signal: ac.signal });
  assert.equal(stream.statusCode, 200);
  const events: string[] = [];
  const parser = new SseParser();
  stream.body.setEncoding('utf8');
  stream.body.on('data', (c: string) => {
    for (const e of parser.push(c)) events.push(`${e.event} ${e.data}`);
  });
  stream.body.on('error', () => {});
  await eventually(() => events.length > 0, 5000, 'the endpoint event');
  const first = events[0] as string;
  assert.match(first, /^endpoint /);
  return { events, endpoint: first.slice('endpoint '.length), close: () => ac.abort() };
}

/** Whether process `pid` is still running. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A route (YAML, under a listener's routes) whose MCP backend `web` at `url` has these processors. */
export function guardedRoute(url: string, path: string, processors: string): string {
  return `
    - matches: [{path: {pathPrefix: ${path}}}]
      policies:
        mcpGuardrails:
          processors:
${processors}
      backends:
      - mcp:
          targets:
          - name: web
            mcp: {host: "${url}"}`;
}
