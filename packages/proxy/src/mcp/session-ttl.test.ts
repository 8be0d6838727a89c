// config.mcp.sessionTtl with the official SDK client and a real streamable-HTTP MCP server behind the
// gateway: a session is served until its time is up, then its id gets 404 (the transport's signal to
// start a new session), its upstream session is ended, and a new session works; without the setting
// sessions do not expire. config.session.key loads as a credential.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../config/load.ts';
import { configIssues } from '../config/test-support.ts';
import {
  connectClient,
  EVERYTHING,
  eventually,
  type HttpPeer,
  postInSession,
  startHttpPeer,
} from './test-support.ts';

let web: HttpPeer;
before(async () => {
  web = await startHttpPeer('web');
});
after(async () => {
  await web?.close();
});

const gateway = (config: string) => `${config}
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - mcp:
          targets:
          - name: web
            mcp: {host: ${JSON.stringify(web.url)}}
`;

describe('config.mcp.sessionTtl', () => {
  test('a session ends when its time is up: 404, its upstream session ended, a new one works', async () => {
    // a session's start is kept in whole seconds, so it lasts 2 to 3 s: time for the first calls on a
    // busy machine
    const proxy = await startProxy(gateway('config: {mcp: {sessionTtl: 3s}}'));
    try {
      const { client, transport } = await connectClient(proxy.url('/mcp'));
      assert.ok((await client.listTools()).tools.length > 0);
      const id = 'sessionId' in transport ? transport.sessionId : undefined;
      assert.ok(id, 'a session id');
      await eventually(() => web.sessions.size === 1, 5000, 'the upstream session');
      await sleep(3200);
      await assert.rejects(client.listTools(), (err: Error) => {
        assert.match(err.message, /404|Session expired/);
        return true;
      });
      // the gateway's raw answer names why, in JSON-RPC
      const raw = await postInSession(proxy.url('/mcp'), id, { jsonrpc: '2.0', id: 9, method: 'tools/list' });
      assert.equal(raw.status, 404);
      assert.match(JSON.stringify(await raw.json()), /Session expired \(config\.mcp\.sessionTtl\)/);
      await eventually(() => web.sessions.size === 0, 5000, 'the upstream session to be ended');
      await client.close().catch(() => {});

      const fresh = await connectClient(proxy.url('/mcp'));
      assert.ok((await fresh.client.listTools()).tools.length > 0);
      await fresh.client.close();
    } finally {
      await proxy.close();
    }
  });

  test('unset: sessions do not expire; 0s is the same', async () => {
    for (const config of ['', 'config: {mcp: {sessionTtl: 0s}}']) {
      const proxy = await startProxy(gateway(config));
      try {
        const { client } = await connectClient(proxy.url('/mcp'));
        await sleep(300);
        assert.ok((await client.listTools()).tools.length > 0);
        await client.close();
      } finally {
        await proxy.close();
      }
    }
    const { ir } = loadConfigText('gw.yaml', gateway('config: {mcp: {sessionTtl: 30m}}'), process.cwd());
    assert.equal(ir.global.mcpSessionTtlMs, 1_800_000);
    assert.match(configIssues(gateway('config: {mcp: {sessionTtl: soon}}')), /config\.mcp\.sessionTtl/);
  });
});

describe('config.mcp.sessionTtl and a stdio target', () => {
  /** The stdio servers this test process has started (the in-process gateway's children). */
  const children = () => {
    const r = spawnSync('pgrep', ['-P', String(process.pid), '-f', 'server-everything'], {
      encoding: 'utf8',
    });
    return r.stdout.split('\n').filter(Boolean).length;
  };

  test("a session's process ends when its time is up, whether or not the client comes back", async () => {
    const proxy = await startProxy(`config: {mcp: {sessionTtl: 2s}}
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - mcp:
          targets:
          - name: everything
            stdio: {cmd: ${JSON.stringify(EVERYTHING.cmd)}, args: ${JSON.stringify(EVERYTHING.args)}}
`);
    try {
      const before = children();
      // a client that initializes and walks away: no stream open, no request after
      const r = await fetch(proxy.url('/mcp'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 't', version: '1' },
          },
        }),
      });
      assert.equal(r.status, 200);
      await r.body?.cancel();
      await eventually(() => children() === before + 1, 5000, 'the stdio process');
      // the sweep ends it within the ttl and a sweep's interval
      await eventually(() => children() === before, 8000, 'the stdio process to end');
    } finally {
      await proxy.close();
    }
  });
});

describe('config.session.key', () => {
  test('loads as a credential: printed redacted, an unset variable refused', () => {
    const { ir } = loadConfigText(
      'gw.yaml',
      gateway('config: {session: {key: 0123456789abcdef0123456789abcdef}}'),
      process.cwd(),
    );
    assert.equal(ir.global.sessionKey?.reveal(), '0123456789abcdef0123456789abcdef');
    assert.doesNotMatch(JSON.stringify(ir.global), /0123456789abcdef/);
    assert.match(
      configIssues(gateway('config: {session: {key: $GW_TEST_UNSET_SESSION_KEY}}')),
      /config\.session\.key: environment variable \$GW_TEST_UNSET_SESSION_KEY is not set; a credential is never taken as written/,
    );
  });
});
