// Scenario 2: 1 MiB request and response bodies over 64 concurrent keep-alive connections, gw (logs
// off and with its default access log) against nginx, the Node floor, agentgateway and the upstream
// reached directly. What it watches besides throughput is RSS: a proxy that streams holds a few
// chunks per transfer, one that buffers holds the bodies.
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentgatewayConfig } from '../lib/agentgateway.ts';
import { gwConfig } from '../lib/gw.ts';
import { runProxyComparison } from '../lib/proxy-comparison.ts';
import { binds, KEEPALIVE, nginxProxy } from './plain-http.ts';
import type { ConfigureInput, Scenario, ScenarioConfig } from './types.ts';

const MiB = 1024 * 1024;
/** The request body every peer is sent: 1 MiB of text (wrk and h2load send it as is). */
const REQUEST_BODY = 'x'.repeat(MiB);

/** The upstream's 1 MiB answer, a file nginx serves for any method (its 405 for POST becomes the file). */
function responseFile(): string {
  const dir = join(tmpdir(), 'gw-bench-large-body');
  mkdirSync(dir, { recursive: true });
  // Printable and not all one byte, so a proxy that compressed or altered it would show.
  const line = 'the quick brown fox jumps over the lazy dog 0123456789\n';
  writeFileSync(join(dir, 'body.txt'), line.repeat(Math.ceil(MiB / line.length)).slice(0, MiB));
  return dir;
}

export function configure({ mode, ports }: ConfigureInput): ScenarioConfig {
  const root = responseFile();
  return {
    // The upstream reads the whole request body before it answers, as an application taking an
    // upload does: nginx's static handler alone answers at once and drops the body as it arrives, and
    // a proxy forwarding it then sees the answer complete before the upload (undici, and so gw and
    // node-floor, closes such an upstream connection; each request paid a new one). A mirror
    // subrequest with its request body makes nginx read the body first (it fits the 2 MiB buffer, no
    // temp file); the subrequest answers 204 without leaving nginx.
    upstream: {
      kind: 'nginx',
      workers: mode.workers,
      http: `${KEEPALIVE}
  server {
    listen 127.0.0.1:${ports.upstream};
    client_max_body_size 2m;
    client_body_buffer_size 2m;
    location / {
      mirror /read-body;
      mirror_request_body on;
      root ${root};
      default_type text/plain;
      try_files /body.txt =404;
      error_page 405 =200 $uri;
    }
    location = /read-body {
      internal;
      return 204;
    }
  }`,
    },
    gwYaml: gwConfig(ports, mode.workers, binds(ports, '  address: 127.0.0.1\n')),
    agentgatewayYaml: agentgatewayConfig(ports, mode.workers, `binds:\n${binds(ports, '')}`),
    // nginx streams the answer as gw and agentgateway do (with its default buffering it would spool
    // 1 MiB answers to temp files); the request body it reads whole first, its default: streamed, the
    // upstream's early answer leaves it with a body it can no longer send and errors.
    nginxHttp: nginxProxy(
      ports,
      `
      client_max_body_size 2m;
      client_body_buffer_size 2m;
      proxy_buffering off;`,
    ),
    load: {
      path: '/',
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: REQUEST_BODY,
      connections: 64,
      // 2 MiB a request through the proxy: 100 req/s is 200 MiB/s, well below saturation.
      rateRps: 100,
      latencyConnections: 20,
    },
  };
}

export const largeBody: Scenario = {
  name: 'large-body',
  // BENCH_QUICK=1: one round, so that every scenario fits the quick run's 3 minutes.
  quick: { pairs: 1 },
  title: '2. Large bodies: 1 MiB request and response, 64 concurrent transfers',
  reference:
    'Target (issue 17): 64 concurrent 1 MiB transfers add at most 64 MiB of RSS over idle and reach at least 0.5× nginx throughput.',
  configure,
  gwAccessLog: true,
  peerLabels: { gw: 'gw (logs off)', gwAccessLog: 'gw (access log)' },
  run: (ctx) => runProxyComparison(ctx, largeBody),
};
