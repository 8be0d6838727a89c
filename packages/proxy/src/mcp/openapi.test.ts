// An `openapi` MCP target: a plain HTTP API (a small pet store on node:http) described by an OpenAPI
// 3 document, served as MCP tools by the gateway, beside a real MCP server (the reference `everything`
// server over streamable HTTP), to the official MCP SDK client. Tools and their input schemas from
// the document (parameters grouped as path, query, header; the JSON body; component schemas as
// $defs), calls that become the right HTTP requests, answers as structured content, a 404 as a failed
// call and a 5xx as a JSON-RPC error, mcpAuthorization on the API's tools, and the config errors.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { tempDir } from '@gw/testkit/temp-dir';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { parse as parseYaml } from 'yaml';
import { loadConfigText } from '../config/load.ts';
import { openApiTools } from './openapi.ts';
import { connectClient, startEverythingHttp, textOf } from './test-support.ts';

const DOC = `
openapi: 3.0.3
info: {title: Pet store, version: "1"}
servers:
  - url: https://pets.example.com/api/v1
paths:
  /pets:
    get:
      operationId: listPets
      summary: List the pets
      parameters:
        - {name: limit, in: query, schema: {type: integer}, description: how many at most}
        - {name: tag, in: query, schema: {type: array, items: {type: string}}}
        - {name: X-Tenant, in: header, schema: {type: string}}
        - {name: X-Page, in: header, schema: {type: integer}}
    post:
      operationId: createPet
      description: Adds a pet to the store.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/NewPet'}
  /pets/{petId}:
    parameters:
      - {name: petId, in: path, required: true, schema: {type: string}}
    get:
      operationId: getPet
      summary: One pet
    delete:
      operationId: deletePet
  /pets/{petId}/records:
    get:
      operationId: getRecords
      parameters:
        - {name: petId, in: path, required: true, schema: {type: string}}
components:
  schemas:
    NewPet:
      type: object
      required: [name]
      properties:
        name: {type: string}
        owner: {$ref: '#/components/schemas/Owner'}
    Owner:
      type: object
      properties: {email: {type: string}}
`;

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let api: Server;
let apiPort: number;
const seen: Seen[] = [];
let everything: { url: string; close(): Promise<void> };
let proxy: TestProxy;
let client: Client;
/** Whether the API serves its document at /openapi.json yet (503 before). */
let docServed = false;

function answer(res: import('node:http').ServerResponse, status: number, body: unknown) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
  res.end(text);
}

before(async () => {
  api = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.method === 'GET' && url.pathname === '/openapi.json') {
        if (!docServed) return answer(res, 503, 'starting');
        return answer(res, 200, parseYaml(DOC));
      }
      if (req.method === 'GET' && url.pathname === '/api/v1/pets')
        return answer(res, 200, [{ id: '1', name: 'Rex', tags: url.searchParams.getAll('tag') }]);
      if (req.method === 'POST' && url.pathname === '/api/v1/pets')
        return answer(res, 201, { id: '2', ...JSON.parse(body) });
      if (req.method === 'GET' && url.pathname === '/api/v1/pets/missing')
        return answer(res, 404, 'no such pet');
      if (req.method === 'GET' && url.pathname.startsWith('/api/v1/pets/'))
        return answer(res, 200, { id: decodeURIComponent(url.pathname.slice(13)), name: 'Rex' });
      if (req.method === 'DELETE') return answer(res, 503, 'database is down');
      answer(res, 404, 'not found');
    });
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  apiPort = (api.address() as AddressInfo).port;
  everything = await startEverythingHttp();
  const dir = tempDir('gw-openapi-');
  const file = join(dir, 'pets.yaml');
  writeFileSync(file, DOC);
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - name: mcp
      policies:
        mcpAuthorization:
          rules: ['!has(mcp.tool) || mcp.tool.name != "getRecords"']
      backends:
      - mcp:
          targets:
          - name: pets
            openapi: {schema: {file: "${file}"}, host: "127.0.0.1:${apiPort}"}
          - name: everything
            mcp: {host: "${everything.url}"}
`);
  ({ client } = await connectClient(proxy.url('/mcp')));
});

after(async () => {
  await client?.close();
  await proxy?.close();
  await everything?.close();
  api?.closeAllConnections();
  api?.close();
});

const last = () => seen[seen.length - 1] as Seen;

describe('an openapi target through the gateway', () => {
  test('tools: one per operation, prefixed beside another target, with grouped input schemas', async () => {
    const { tools } = await client.listTools();
    const mine = tools.filter((t) => t.name.startsWith('pets_'));
    assert.deepEqual(
      mine.map((t) => t.name),
      ['pets_listPets', 'pets_createPet', 'pets_getPet', 'pets_deletePet'],
    );
    assert.ok(
      tools.some((t) => t.name.startsWith('everything_')),
      'the MCP server’s tools too',
    );
    const list = mine[0];
    assert.equal(list?.description, 'List the pets');
    assert.deepEqual(list?.inputSchema, {
      type: 'object',
      properties: {
        query: {
          type: 'object',
          properties: {
            limit: { type: 'integer', description: 'how many at most' },
            tag: { type: 'array', items: { type: 'string' } },
          },
        },
        header: {
          type: 'object',
          properties: { 'X-Tenant': { type: 'string' }, 'X-Page': { type: 'integer' } },
        },
      },
    });
    const create = mine[1];
    assert.ok(create);
    assert.equal(create.description, 'Adds a pet to the store.');
    assert.deepEqual(create.inputSchema.required, ['body']);
    assert.deepEqual((create.inputSchema.properties as Record<string, unknown>).body, {
      $ref: '#/$defs/NewPet',
    });
    assert.deepEqual(Object.keys((create.inputSchema as unknown as { $defs: object }).$defs).sort(), [
      'NewPet',
      'Owner',
    ]);
    assert.deepEqual(mine[2]?.inputSchema.required, ['path']);
  });

  test('a call is the HTTP request the operation describes; JSON comes back structured', async () => {
    const r = await client.callTool({
      name: 'pets_listPets',
      arguments: {
        query: { limit: 5, tag: ['a b', 'c'] },
        header: { 'X-Tenant': 'acme', Host: 'evil', 'X-Page': 2 },
      },
    });
    const call = last();
    assert.equal(call.method, 'GET');
    assert.equal(call.url, '/api/v1/pets?limit=5&tag=a%20b&tag=c');
    assert.equal(call.headers['x-tenant'], 'acme');
    assert.equal(call.headers['x-page'], '2', 'a number is sent as its text');
    assert.equal(call.headers.host, `127.0.0.1:${apiPort}`);
    assert.equal(r.isError, undefined);
    assert.deepEqual(r.structuredContent, { data: [{ id: '1', name: 'Rex', tags: ['a b', 'c'] }] });
    assert.deepEqual(JSON.parse(textOf(r)), r.structuredContent);
  });

  test('a JSON body is sent as JSON; a path parameter is encoded within its segment', async () => {
    const created = await client.callTool({
      name: 'pets_createPet',
      arguments: { body: { name: 'Tom', owner: { email: 'a@b.c' } } },
    });
    assert.deepEqual(JSON.parse(last().body), { name: 'Tom', owner: { email: 'a@b.c' } });
    assert.equal(last().headers['content-type'], 'application/json');
    assert.deepEqual(created.structuredContent, { id: '2', name: 'Tom', owner: { email: 'a@b.c' } });
    const got = await client.callTool({ name: 'pets_getPet', arguments: { path: { petId: 'a/b c' } } });
    assert.equal(last().url, '/api/v1/pets/a%2Fb%20c');
    assert.deepEqual(got.structuredContent, { id: 'a/b c', name: 'Rex' });
  });

  test('a 404 is a failed call the model can read; a 5xx a JSON-RPC error; a missing path parameter too', async () => {
    const missing = await client.callTool({ name: 'pets_getPet', arguments: { path: { petId: 'missing' } } });
    assert.equal(missing.isError, true);
    assert.deepEqual(missing.structuredContent, { code: 404, message: 'no such pet' });
    await assert.rejects(
      client.callTool({ name: 'pets_deletePet', arguments: { path: { petId: '1' } } }),
      /failed with status 503: database is down/,
    );
    const before = seen.length;
    await assert.rejects(
      client.callTool({ name: 'pets_getPet', arguments: {} }),
      /path parameter petId is missing/,
    );
    assert.equal(seen.length, before, 'no request was made');
  });

  test('mcpAuthorization covers the API’s tools like any other: not listed, not called', async () => {
    const { tools } = await client.listTools();
    assert.ok(!tools.some((t) => t.name === 'pets_getRecords'));
    const before = seen.length;
    await assert.rejects(
      client.callTool({ name: 'pets_getRecords', arguments: { path: { petId: '1' } } }),
      /unknown tool "[^"]+": no target serves it/,
    );
    assert.equal(seen.length, before);
  });
});

describe('a document given by url', () => {
  /** An MCP client of a proxy whose one target is the pets API (at apiPort) with its document at `url`. */
  const clientFor = async (t: TestContext, url: string) => {
    const p = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - mcp:
          targets:
          - name: pets
            openapi: {schema: {url: "${url}"}, host: "127.0.0.1:${apiPort}"}
`);
    t.after(() => p.close());
    const { client: c } = await connectClient(p.url('/mcp'));
    t.after(() => c.close());
    return c;
  };
  /** The document's tools are listed, and a call reaches the API under the document's server path. */
  const servesTheApi = async (c: Client, petId: string) => {
    const { tools } = await c.listTools();
    assert.deepEqual(
      tools.map((x) => x.name),
      ['listPets', 'createPet', 'getPet', 'deletePet', 'getRecords'],
    );
    const got = await c.callTool({ name: 'getPet', arguments: { path: { petId } } });
    assert.equal(last().url, `/api/v1/pets/${petId}`, "under the fetched document's server path");
    assert.deepEqual(got.structuredContent, { id: petId, name: 'Rex' });
  };

  test('fetched on first use; a failed fetch fails the list and is tried again next time', async (t) => {
    const c = await clientFor(t, `http://127.0.0.1:${apiPort}/openapi.json`);
    docServed = false;
    await assert.rejects(
      c.listTools(),
      /the OpenAPI document at http:\/\/127\.0\.0\.1:\d+\/openapi\.json answered 503/,
    );
    docServed = true;
    await servesTheApi(c, '7');
  });

  test("a document at another origin than the API's is fetched on gw's own connection", async (t) => {
    const docs = createServer((req, res) => {
      if (req.url === '/specs/pets.json') return answer(res, 200, parseYaml(DOC));
      answer(res, 404, 'not found');
    });
    await new Promise<void>((r) => docs.listen(0, '127.0.0.1', r));
    t.after(() => new Promise((r) => docs.close(r)));
    const c = await clientFor(t, `http://127.0.0.1:${(docs.address() as AddressInfo).port}/specs/pets.json`);
    docServed = false; // the API's own /openapi.json answers 503: it must not be the one read
    await servesTheApi(c, '9');
  });
});

describe('documents and config errors', () => {
  const load = (target: string) => {
    try {
      loadConfigText(
        'gw.yaml',
        `binds:\n- port: 0\n  listeners:\n  - routes:\n    - backends:\n      - mcp:\n          targets:\n          - name: api\n            ${target}\n`,
        process.cwd(),
        () => undefined,
      );
      return [];
    } catch (err) {
      assert.ok(err instanceof ConfigError, String(err));
      return err.issues.map((i) => `${i.path}: ${i.message}`);
    }
  };

  test('an operation without operationId, a Swagger 2.0 document, an unreadable file, a url that is not http', () => {
    const noId = JSON.stringify({ openapi: '3.0.0', paths: { '/x': { get: {} } } });
    assert.deepEqual(load(`openapi: {schema: '${noId}', host: "127.0.0.1:1"}`), [
      'binds[0].listeners[0].routes[0].backends[0].mcp.targets[0].openapi.schema: the OpenAPI document cannot be served as tools: paths./x.get: every operation needs an operationId: it is the tool name',
    ]);
    assert.match(
      load(`openapi: {schema: '{"swagger": "2.0"}', host: "127.0.0.1:1"}`).join('\n'),
      /an OpenAPI 3 document is needed .*Swagger 2\.0 is not read/,
    );
    assert.match(
      load('openapi: {schema: {file: /nonexistent/api.yaml}, host: "127.0.0.1:1"}').join('\n'),
      /openapi\.schema\.file: cannot read \/nonexistent\/api\.yaml/,
    );
    assert.match(
      load('openapi: {schema: {url: "ftp://x/api.json"}, host: "127.0.0.1:1"}').join('\n'),
      /openapi\.schema\.url: an http:\/\/ or https:\/\/ URL/,
    );
    assert.match(
      load('openapi: {schema: {url: "http://"}, host: "127.0.0.1:1"}').join('\n'),
      /openapi\.schema\.url: not a URL with a host/,
    );
  });

  test('a host URL with a path as well is refused; server variables take their defaults', () => {
    assert.match(
      load(`openapi: {schema: '{"openapi": "3.0.0"}', host: "https://api.example.com", path: /v3}`).join(
        '\n',
      ),
      /openapi: a URL in host already says the port and path; drop port and path/,
    );
    const doc = {
      openapi: '3.0.0',
      servers: [
        {
          url: 'https://{region}.example.com/api/{version}',
          variables: { version: { default: 'v2' }, region: { default: 'eu' } },
        },
      ],
      paths: {},
    };
    assert.equal(openApiTools(doc).serverPath, '/api/v2');
    // a relative server URL is read against where the document was fetched
    const relative = { openapi: '3.0.0', servers: [{ url: 'api' }], paths: {} };
    assert.equal(openApiTools(relative, 'http://api:8000/v2/openapi.json').serverPath, '/v2/api');
    assert.equal(openApiTools(relative).serverPath, '/api');
    assert.throws(
      () => openApiTools({ ...doc, servers: [{ url: '/api/{version}' }] }),
      /servers\[0\]\.url: the variable \{version\} has no default/,
    );
  });

  test('a path’s parameters, with their component schemas, go to every operation of the path', () => {
    const { tools } = openApiTools({
      openapi: '3.0.0',
      paths: {
        '/things/{id}': {
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { $ref: '#/components/schemas/Id' } },
          ],
          get: { operationId: 'getThing' },
          delete: { operationId: 'deleteThing' },
        },
      },
      components: { schemas: { Id: { type: 'string', pattern: '^[a-z]+$' } } },
    });
    for (const t of tools) {
      assert.deepEqual(t.inputSchema.$defs, { Id: { type: 'string', pattern: '^[a-z]+$' } }, t.name);
      assert.deepEqual(t.params.path, ['id']);
    }
  });

  test('references: a cycle is bundled once; a missing one and a foreign one are named', () => {
    const cyclic = openApiTools({
      openapi: '3.1.0',
      paths: {
        '/n': {
          post: {
            operationId: 'addNode',
            requestBody: {
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } },
            },
          },
        },
      },
      components: {
        schemas: { Node: { type: 'object', properties: { next: { $ref: '#/components/schemas/Node' } } } },
      },
    });
    assert.deepEqual(cyclic.tools[0]?.inputSchema.$defs, {
      Node: { type: 'object', properties: { next: { $ref: '#/$defs/Node' } } },
    });
    const op = (schema: unknown) => ({
      openapi: '3.0.0',
      paths: {
        '/n': { post: { operationId: 'x', requestBody: { content: { 'application/json': { schema } } } } },
      },
    });
    assert.throws(
      () => openApiTools(op({ $ref: '#/components/schemas/Nope' })),
      /names nothing in the document/,
    );
    assert.throws(
      () => openApiTools(op({ $ref: 'other.yaml#/X' })),
      /may refer only to #\/components\/schemas\//,
    );
  });
});
