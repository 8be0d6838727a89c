// A header a policy puts on a gateway error that no HTTP message can carry (a line break in its value;
// the config refuses such a literal, but a config pushed over xDS by another control plane is not
// checked by gw's loader) costs that header, not the answer: the client gets the 503 at once, where
// writing the head threw and the client waited for ever.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { httpGet } from '@gw/testkit';
import pino from 'pino';
import type { ProxyIR } from '../../config/ir.ts';
import { loadConfigText } from '../../config/load.ts';
import { DataPlane } from '../../server/data-plane.ts';

test("a header value that cannot be sent is left off the gateway's error answer", async (t) => {
  const quiet = pino({ level: 'silent' });
  const plane = new DataPlane({ log: quiet, accessLog: quiet, worker: 0, workers: 1 });
  t.after(() => plane.drain(100));
  const { ir } = loadConfigText(
    't.yaml',
    `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:1"}]
      policies:
        responseHeaderModifier: {set: {x-bad: PLACEHOLDER, x-good: kept}}
`,
    process.cwd(),
  );
  const text = JSON.stringify(ir);
  assert.ok(text.includes('PLACEHOLDER'), 'the value is in the IR as written');
  const pushed = JSON.parse(text.replace('PLACEHOLDER', 'v1\\n')) as ProxyIR;
  const port = Object.values(await plane.apply(pushed))[0] as number;
  const r = await httpGet(port, '/');
  assert.equal(r.status, 503, 'the backend refuses the connection');
  assert.equal(r.headers['x-good'], 'kept');
  assert.equal(r.headers['x-bad'], undefined);
});

test('a header value with a line break is a config error at its field (a secret read with its newline)', () => {
  assert.throws(
    () =>
      loadConfigText(
        't.yaml',
        `binds:
- port: 0
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:1"}]
      policies:
        requestHeaderModifier: {add: {x-token: "abc\\n"}}
`,
        process.cwd(),
      ),
    /t\.yaml:7:\d+: .*requestHeaderModifier\.add\.x-token: a header value cannot hold a line break/,
  );
});
