// Scenario 1: plain HTTP/1.1 proxying of a small GET response over 64 keep-alive connections, gw (with
// logs off and with its default access log) against nginx, the Node floor, agentgateway and the
// upstream reached directly.
import { agentgatewayConfig } from '../lib/agentgateway.ts';
import { gwConfig } from '../lib/gw.ts';
import { runProxyComparison } from '../lib/proxy-comparison.ts';
import type { ConfigureInput, Scenario, ScenarioConfig } from './types.ts';

const BODY = 'hello from the gw bench upstream\n';

// Every hop keeps connections for the whole run: nginx closes a keep-alive connection after 1000
// requests by default, which would make reconnects part of what is measured.
export const KEEPALIVE = `  keepalive_requests 1000000;
  keepalive_timeout 300s;`;

/** One route to the upstream; gw's bind also names its loopback address, agentgateway's takes none. */
export const binds = (ports: ConfigureInput['ports'], address: string): string => `- port: ${ports.gw}
${address}  listeners:
  - name: bench
    protocol: HTTP
    routes:
    - name: upstream
      backends:
      - host: 127.0.0.1:${ports.upstream}
`;

/** The nginx peer: a keep-alive proxy_pass to the upstream, with `extra` directives in its location. */
export function nginxProxy(ports: ConfigureInput['ports'], extra = ''): string {
  return `${KEEPALIVE}
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
      proxy_set_header Connection "";${extra}
    }
  }`;
}

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
    gwYaml: gwConfig(ports, mode.workers, binds(ports, '  address: 127.0.0.1\n')),
    agentgatewayYaml: agentgatewayConfig(ports, mode.workers, `binds:\n${binds(ports, '')}`),
    nginxHttp: nginxProxy(ports),
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
  gwAccessLog: true,
  peerLabels: { gw: 'gw (logs off)', gwAccessLog: 'gw (access log)' },
  // Its idle RSS figures are issue 17's targets: quick runs measure them too.
  quickIdleMemory: true,
  run: (ctx) => runProxyComparison(ctx, plainHttp),
};
