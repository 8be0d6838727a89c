// The upstream of the mcp scenario, a program of its own: a real MCP server (the official SDK's
// low-level `Server` behind its stateful StreamableHTTPServerTransport, which answers each POST with a
// one-event SSE stream as SDK servers do by default) on 127.0.0.1:`--port`, path /mcp. Its tools are
// cheap on purpose, so the upstream does not dominate what a proxy adds: `echo` (the timed call) and a
// few more with plain JSON schemas, answered from constants with no schema conversion per request.
// GET / answers 200 (readiness).
//   node bench/lib/mcp-upstream.ts --port 8091 --name alpha
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';
// The SDK is a dependency of @gw/proxy, not of the repository root, so it is reached through that
// package's node_modules (bench/ has no package.json of its own).
import { Server } from '../../packages/proxy/node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js';
import { StreamableHTTPServerTransport } from '../../packages/proxy/node_modules/@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from '../../packages/proxy/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    name: { type: 'string', default: 'bench' },
  },
});
const port = Number(values.port);
const name = values.name;
if (!Number.isInteger(port) || port <= 0) throw new Error('--port is required');

const TOOLS = [
  {
    name: 'echo',
    description: 'Echoes the message back',
    inputSchema: {
      type: 'object' as const,
      properties: { message: { type: 'string', description: 'What to echo' } },
      required: ['message'],
    },
  },
  {
    name: 'add',
    description: 'Adds two numbers',
    inputSchema: {
      type: 'object' as const,
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
  {
    name: 'time',
    description: 'The server clock, as an ISO 8601 string',
    inputSchema: { type: 'object' as const, properties: {} },
  },
];

function newServer(): Server {
  const s = new Server({ name: `${name}-bench`, version: '1.0.0' }, { capabilities: { tools: {} } });
  s.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  s.setRequestHandler(CallToolRequestSchema, async (req) => {
    const args = req.params.arguments ?? {};
    switch (req.params.name) {
      case 'echo':
        return { content: [{ type: 'text', text: String(args['message'] ?? '') }] };
      case 'add':
        return { content: [{ type: 'text', text: String(Number(args['a']) + Number(args['b'])) }] };
      case 'time':
        return { content: [{ type: 'text', text: new Date().toISOString() }] };
      default:
        return { isError: true, content: [{ type: 'text', text: `no tool ${req.params.name}` }] };
    }
  });
  return s;
}

const sessions = new Map<string, StreamableHTTPServerTransport>();

async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    return;
  }
  if (path !== '/mcp') {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  let body: unknown;
  if (req.method === 'POST') {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('body is not JSON\n');
      return;
    }
  }
  const sid = req.headers['mcp-session-id'];
  let t = typeof sid === 'string' ? sessions.get(sid) : undefined;
  if (t === undefined) {
    if (typeof sid === 'string' || (body as { method?: unknown } | undefined)?.method !== 'initialize') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }),
      );
      return;
    }
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, created);
      },
    });
    created.onclose = () => {
      if (created.sessionId !== undefined) sessions.delete(created.sessionId);
    };
    await newServer().connect(created);
    t = created;
  }
  await t.handleRequest(req, res, body);
}

const server = http.createServer({ keepAliveTimeout: 300_000, noDelay: true }, (req, res) => {
  handle(req, res).catch((err: unknown) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`${err instanceof Error ? err.message : String(err)}\n`);
  });
});
server.listen(port, '127.0.0.1', () => {
  console.log(`mcp upstream ${name} on http://127.0.0.1:${port}/mcp`);
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
