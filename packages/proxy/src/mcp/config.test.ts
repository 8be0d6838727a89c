// The standalone config of MCP backends: agentgateway's shape (mcp.targets with stdio / sse / mcp,
// prefixMode, failureMode, statefulMode, mcpAuthorization) into the IR, and the errors a mistake gets,
// each naming the file, line and field.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfigText } from '../config/load.ts';
import { assertConfigRejects } from './test-support.ts';

const load = (text: string) => loadConfigText('gw.yaml', text, '/tmp');

function backend(mcp: string, policies = ''): string {
  return `binds:
- port: 3000
  listeners:
  - routes:
    - backends:
      - mcp:
${mcp
  .trim()
  .split('\n')
  .map((l) => `          ${l}`)
  .join('\n')}
${policies}`;
}

function mcpOf(text: string) {
  const t = load(text).ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
  assert.equal(t?.kind, 'mcp');
  return t as Extract<typeof t, { kind: 'mcp' }>;
}

const rejects = (text: string, re: RegExp) => assertConfigRejects(load, text, re);

describe('mcp backend config', () => {
  test('targets of each transport, with the defaults: Conditional, FailClosed, Stateful', () => {
    const t = mcpOf(
      backend(`
targets:
- name: everything
  stdio: {cmd: npx, args: ["@modelcontextprotocol/server-everything"], env: {A: b}}
- name: web
  mcp: {host: "http://localhost:3005/mcp"}
- name: old
  sse: {host: localhost, port: 3006, path: /sse}
- name: plain
  mcp: {host: "mcp.internal:8080"}
- name: secure
  mcp: {host: "https://mcp.example.com"}
`),
    );
    assert.equal(t.prefixMode, 'Conditional');
    assert.equal(t.failureMode, 'FailClosed');
    assert.equal(t.sessionRouting, 'Stateful');
    assert.deepEqual(
      t.targets.map((x) => x.transport),
      [
        {
          kind: 'stdio',
          cmd: 'npx',
          args: ['@modelcontextprotocol/server-everything'],
          env: { A: 'b' },
          clearEnv: false,
        },
        { kind: 'streamable-http', origin: 'http://localhost:3005', path: '/mcp', tls: false },
        { kind: 'sse', origin: 'http://localhost:3006', path: '/sse', tls: false },
        { kind: 'streamable-http', origin: 'http://mcp.internal:8080', path: '/mcp', tls: false },
        { kind: 'streamable-http', origin: 'https://mcp.example.com:443', path: '/', tls: true },
      ],
    );
  });

  test("modes in agentgateway's spelling and in the CRD's", () => {
    for (const [a, b, c] of [
      ['always', 'failOpen', 'stateless'],
      ['Never', 'FailOpen', 'Stateless'],
    ]) {
      const t = mcpOf(
        backend(`
prefixMode: ${a}
failureMode: ${b}
statefulMode: ${c}
targets:
- {name: a, stdio: {cmd: x}}
`),
      );
      assert.equal(t.prefixMode, a === 'always' ? 'Always' : 'Never');
      assert.equal(t.failureMode, 'FailOpen');
      assert.equal(t.sessionRouting, 'Stateless');
    }
  });

  test('mcpAuthorization of the route and the backend accumulate on the target', () => {
    const text = backend(
      `targets:\n- {name: a, stdio: {cmd: x}}`,
      `        policies:
          mcpAuthorization:
            rules: ['mcp.tool.name == "echo"']`,
    ).replace(
      '    - backends:',
      `    - policies:
        mcpAuthorization: {rules: [{deny: 'mcp.tool.name == "rm"'}]}
      backends:`,
    );
    const t = mcpOf(text);
    assert.equal(t.authorization.length, 2);
  });

  test("a rule that does not compile is named where it is written: the route's, the backend's", () => {
    const text = (route: string, own: string) =>
      backend(
        `targets:\n- {name: a, stdio: {cmd: x}}`,
        `        policies:
          mcpAuthorization:
            rules: ['${own}']`,
      ).replace(
        '    - backends:',
        `    - policies:
        mcpAuthorization: {rules: ['${route}']}
      backends:`,
      );
    rejects(
      text('mcp.tool.name ==', 'true'),
      /gw\.yaml:6:36: binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.mcpAuthorization\.rules\[0\]: invalid CEL/,
    );
    rejects(
      text('true', 'mcp.tool.name =='),
      /gw\.yaml:\d+:\d+: binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.policies\.mcpAuthorization\.rules\[0\]: invalid CEL/,
    );
  });

  test('a target needs exactly one transport', () => {
    rejects(
      backend(`targets:\n- {name: a}`),
      /gw\.yaml:\d+:\d+: .*targets\[0\]: a target needs exactly one of stdio, sse, mcp/,
    );
    rejects(
      backend(`targets:\n- {name: a, stdio: {cmd: x}, mcp: {host: "http://h/mcp"}}`),
      /targets\[0\]: a target has exactly one of stdio, sse, mcp or openapi \(this one has stdio and mcp\)/,
    );
  });

  test('an openapi target says host or backend, not both (target-auth.test.ts serves by backend)', () => {
    rejects(
      backend(`targets:\n- {name: a, openapi: {host: x, backend: api, schema: {file: s.json}}}`),
      /targets\[0\]\.openapi\.backend: set host or backend, not both/,
    );
    rejects(
      backend(`targets:\n- {name: a, openapi: {schema: {file: s.json}}}`),
      /targets\[0\]\.openapi\.host: where the API is: host or backend/,
    );
  });

  test('target names are unique and carry no "_" (the prefix separator)', () => {
    rejects(
      backend(`targets:\n- {name: a, stdio: {cmd: x}}\n- {name: a, stdio: {cmd: y}}`),
      /targets\[1\]\.name: target name "a" is also used by targets\[0\]/,
    );
    rejects(backend(`targets:\n- {name: my_server, stdio: {cmd: x}}`), /targets\[0\]\.name: .*no "_"/);
  });

  test('a remote target says where it is', () => {
    rejects(
      backend(`targets:\n- {name: a, mcp: {host: "mcp.internal"}}`),
      /targets\[0\]\.mcp\.port: .*needs a port/,
    );
    rejects(
      backend(`targets:\n- {name: a, mcp: {host: "http://h:1/mcp", port: 2}}`),
      /targets\[0\]\.mcp: a URL in host already says the port and path/,
    );
    rejects(
      backend(`targets:\n- {name: a, sse: {host: "ftp://h/x"}}`),
      /targets\[0\]\.sse\.host: an MCP target URL is http/,
    );
  });

  test('unknown modes, too many targets, and mcpAuthorization on another backend are errors', () => {
    rejects(backend(`prefixMode: sometimes\ntargets:\n- {name: a, stdio: {cmd: x}}`), /prefixMode/);
    const many = Array.from({ length: 129 }, (_, i) => `- {name: t${i}, stdio: {cmd: x}}`).join('\n');
    rejects(backend(`targets:\n${many}`), /targets/);
    rejects(
      `binds:
- port: 3000
  listeners:
  - routes:
    - backends:
      - host: "127.0.0.1:8080"
        policies:
          mcpAuthorization: {rules: ['true']}
`,
      /backends\[0\]\.policies\.mcpAuthorization: mcpAuthorization applies only to mcp backends/,
    );
    rejects(
      backend(
        `targets:\n- {name: a, stdio: {cmd: x}}`,
        `        policies:\n          mcpAuthorization: {rules: ['mcp.tool.name ==']}`,
      ),
      /mcpAuthorization/,
    );
  });

  test('a named backend of kind mcp', () => {
    const ir = load(`binds:
- port: 3000
  listeners:
  - routes:
    - backends:
      - backend: tools
backends:
- name: tools
  mcp:
    targets:
    - {name: a, stdio: {cmd: x}}
`).ir;
    assert.equal(ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target.kind, 'mcp');
  });
});
