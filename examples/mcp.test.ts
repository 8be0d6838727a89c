// examples/mcp.yaml as a user runs it: gw starts both stdio servers, and the MCP SDK client sees the
// federated, prefixed tools, uses the memory server through the gateway, and cannot delete.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startProxy } from '@gw/testkit/proxy';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const dir = dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'gw-mcp-example-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

test('mcp.yaml federates server-everything and server-memory over stdio', async (t) => {
  const text = readFileSync(join(dir, 'mcp.yaml'), 'utf8')
    .replaceAll('${PORT:-3000}', '0')
    .replaceAll('${MCP_SERVERS:-examples/node_modules}', join(dir, 'node_modules'))
    .replaceAll('${MEMORY_FILE:-/tmp/gw-mcp-memory.jsonl}', join(tmp, 'memory.jsonl'));
  const proxy = await startProxy(text, dir);
  t.after(() => proxy.close());
  const client = new Client({ name: 'example-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url('/mcp'))));
  t.after(() => client.close());

  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(names.includes('everything_echo'), names.join(','));
  assert.ok(names.includes('memory_create_entities'), names.join(','));
  assert.ok(!names.some((n) => n.startsWith('memory_delete_')), 'delete_* are hidden by the rule');
  // the everything server's get-env would show a client gw's environment (a stdio target's)
  assert.ok(!names.includes('everything_get-env'), 'get-env is hidden by the rule');
  await assert.rejects(
    client.callTool({ name: 'everything_get-env', arguments: {} }),
    /unknown (tool|resource) "[^"]+": no target serves it/,
  );

  await client.callTool({
    name: 'memory_create_entities',
    arguments: { entities: [{ name: 'gw', entityType: 'gateway', observations: ['federates MCP servers'] }] },
  });
  const graph = await client.callTool({ name: 'memory_read_graph', arguments: {} });
  assert.match(JSON.stringify(graph.content), /federates MCP servers/);
  await assert.rejects(
    client.callTool({ name: 'memory_delete_entities', arguments: { entityNames: ['gw'] } }),
    /unknown tool "[^"]+": no target serves it/,
  );
});
