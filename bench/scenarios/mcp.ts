// Scenario 6: MCP federation. gw's mcp backend multiplexes two streamable-HTTP MCP servers (the SDK's
// server in bench/lib/mcp-upstream.ts, with cheap constant tools) behind one endpoint; a raw JSON-RPC
// client times tools/list (fanned out to both targets and merged) and tools/call of `alpha_echo`
// (routed to one target) through it, against the same calls to one target directly, and tools/list
// against the client listing both targets at once itself (the fan-out's own floor on this machine).
// agentgateway runs the equivalent mcp backend when its binary is there. nginx and node-floor are left out: a plain
// proxy_pass to one target is not federation (no fan-out, no merged list, no prefixed names, no
// session per target), so their figures would price a different job.
import { agentgatewayConfig } from '../lib/agentgateway.ts';
import { gwConfig } from '../lib/gw.ts';
import { type McpLoad, mcpUpstreamArgv, runMcpComparison } from '../lib/mcp-comparison.ts';
import type { ConfigureInput, Ports, Scenario, ScenarioConfig, Settings } from './types.ts';

/** The targets' names; through a gateway the timed tool is `<first>_echo` (prefixMode Conditional). */
export const TARGETS = ['alpha', 'beta'] as const;
/** Tools each upstream serves (echo, add, time). */
export const TOOLS_PER_TARGET = 3;
const CONCURRENCY = 8;

/** Per peer and round: 400 + 400 sequential requests, 2000 at once (a few seconds); quick: 100 + 100, 400. */
export function mcpLoad(quick: boolean): McpLoad {
  return quick
    ? { sequential: 100, requests: 400, concurrency: CONCURRENCY }
    : { sequential: 400, requests: 2000, concurrency: CONCURRENCY };
}

/** The two targets' ports: the scenario's upstream and its second one (0 when not allocated). */
export function targetPorts(ports: Ports): [number, number] {
  return [ports.upstream, ports.upstream2 ?? 0];
}

/** The mcp backend with both targets; gw's bind names its loopback address, agentgateway's takes none. */
const binds = (ports: Ports, address: string): string => {
  const [a, b] = targetPorts(ports);
  return `- port: ${ports.gw}
${address}  listeners:
  - name: bench
    protocol: HTTP
    routes:
    - name: mcp
      backends:
      - mcp:
          targets:
          - name: ${TARGETS[0]}
            mcp: {host: "http://127.0.0.1:${a}/mcp"}
          - name: ${TARGETS[1]}
            mcp: {host: "http://127.0.0.1:${b}/mcp"}
`;
};

export function configure({ mode, ports }: ConfigureInput): ScenarioConfig {
  return {
    upstream: { kind: 'command', argv: mcpUpstreamArgv(ports.upstream, TARGETS[0]), readyPath: '/' },
    gwYaml: gwConfig(ports, mode.workers, binds(ports, '  address: 127.0.0.1\n')),
    // No nginx peer (see the file's head).
    nginxHttp: '',
    agentgatewayYaml: agentgatewayConfig(ports, mode.workers, `binds:\n${binds(ports, '')}`),
    load: {
      path: '/mcp',
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: `${TARGETS[0]}_echo`, arguments: { message: 'hello from the gw bench' } },
      }),
      connections: CONCURRENCY,
      // No fixed-rate run: the client paces itself (one request at a time, then CONCURRENCY at once).
      rateRps: 0,
      latencyConnections: CONCURRENCY,
    },
  };
}

function describeLoad(settings: Settings): string {
  const l = mcpLoad(settings.quick);
  return (
    `one MCP session, then ${l.sequential} tools/list and ${l.sequential} tools/call (echo) one at a ` +
    `time, then ${l.requests} tools/call ${l.concurrency} at a time on ${l.concurrency} sessions (direct to ` +
    `both targets: the ${l.sequential} lists only, to both at once); raw ` +
    'JSON-RPC over keep-alive HTTP/1.1 from a Node client (bench/lib/mcp-client.ts) to two SDK MCP ' +
    'servers on streamable HTTP (bench/lib/mcp-upstream.ts); direct talks to one of them'
  );
}

export const mcp: Scenario = {
  name: 'mcp',
  title: '6. MCP: tools/list and tools/call through a backend federating 2 targets',
  reference:
    'Target for gw (issue 12): ≤ 1 ms added at p50. "Added" is the peer minus direct (one target, no ' +
    'proxy) in the same round. A federated tools/list waits for both targets, which share the load ' +
    'core with the client, so part of its added time is the second target serving its list: the rows ' +
    '"over direct to both targets" take that floor away. Throughput is the closed loop of 8 calls in ' +
    'flight, with the client and both targets on one core: not a saturation figure. nginx ' +
    'and node-floor are not peers here: a proxy_pass to one target does not federate. agentgateway ' +
    'v1.6.0 published no MCP figure.',
  configure,
  peerLabels: { gw: 'gw mcp (2 targets)', agentgateway: 'agentgateway mcp (2 targets)' },
  describeLoad,
  run: (ctx) =>
    runMcpComparison(ctx, { ...mcp, mcpLoad, targets: TARGETS, toolsPerTarget: TOOLS_PER_TARGET }),
};
