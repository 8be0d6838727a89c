// Scenario 1: plain HTTP/1.1 proxying of a small GET response over 64 keep-alive connections, gw
// against nginx and against the upstream reached directly.
import { gwConfig } from '../lib/gw.ts';
import { runProxyComparison } from '../lib/proxy-comparison.ts';
import type { ConfigureInput, Scenario, ScenarioConfig } from './types.ts';

const BODY = 'hello from the gw bench upstream\n';

// Every hop keeps connections for the whole run: nginx closes a keep-alive connection after 1000
// requests by default, which would make reconnects part of what is measured.
const KEEPALIVE = `  keepalive_requests 1000000;
  keepalive_timeout 300s;`;

export function configure({ mode, ports }: ConfigureInput): ScenarioConfig {
  return {
    // The upstream is nginx with a fixed `return 200`, not a node:http server: it shares the load core
    // with wrk, and at a few µs per request it stays far from saturating it even when the nginx peer
    // runs flat out, whereas node:http costs several times more and would cap both proxies alike,
    // flattening the gw/nginx ratio towards 1.
    upstream: {
      kind: 'nginx',
      workers: mode.workers,
      http: `${KEEPALIVE}
  server {
    listen 127.0.0.1:${ports.upstream};
    location / {
      default_type text/plain;
      return 200 '${BODY.replace('\n', '\\n')}';
    }
  }`,
    },
    gwYaml: gwConfig(
      ports,
      mode.workers,
      `- port: ${ports.gw}
  address: 127.0.0.1
  listeners:
  - name: bench
    protocol: HTTP
    routes:
    - name: upstream
      backends:
      - host: 127.0.0.1:${ports.upstream}
`,
    ),
    nginxHttp: `${KEEPALIVE}
  upstream backend {
    server 127.0.0.1:${ports.upstream};
    keepalive 64;
${KEEPALIVE.replace(/^ {2}/gm, '    ')}
  }
  server {
    listen 127.0.0.1:${ports.nginx};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }`,
    load: {
      path: '/',
      method: 'GET',
      headers: {},
      body: undefined,
      connections: 64,
      rateRps: 1000,
      latencyConnections: 20,
    },
  };
}

export const plainHttp: Scenario = {
  name: 'plain-http',
  title: '1. Plain HTTP proxy, small body, keep-alive, 64 connections',
  reference:
    'agentgateway v1.6.0 (published, 2 cores): ~82 µs CPU per plain proxied request, p99 +0.15–0.3 ms at 1–3k rps, 12–95 MiB RSS.',
  configure,
  run: (ctx) => runProxyComparison(ctx, plainHttp),
};
