// A GwBackend's `spec.mcp` → the proto's Mcp backend (proto3 JSON): static targets as they are, and
// each selector target as one target per MCP port of every Service it finds. agentgateway's
// conventions, so its users' Services work unchanged:
// - a Service port is MCP when its appProtocol is gw.dev/mcp (streamable HTTP) or gw.dev/mcp-sse
//   (SSE), or the same under agentgateway.dev/ or kgateway.dev/;
// - its path is the Service's gw.dev/mcp-path annotation (or agentgateway.dev/ or kgateway.dev/),
//   else the protocol's default (/mcp, /sse);
// - the target it becomes is named <service>-<port name> (<service>-<port number> when unnamed).
// A target (or Service port) that cannot be used is left out and named in PartiallyAccepted; with
// none left the backend is not usable. The Service list is read from the snapshot, so a Service
// coming or going re-translates the backend like any other watched change.
import { MCP_TARGET_POLICIES, McpTarget as StandaloneMcpTarget } from '@gw/api';
import type { GwBackendSpec } from '@gw/api/crd/gwbackend';
import { matchesLabels } from './gateways.ts';
import { backendPolicy } from './policy/backend.ts';
import { quote, type ServicePolicyLookup } from './policy/context.ts';
import type { BackendPolicies } from './policy/spec.ts';
import { describeProblems } from './problems.ts';
import type { KubeObject, Lookup } from './types.ts';

export type McpSpec = NonNullable<GwBackendSpec['mcp']>;
type Protocol = 'StreamableHTTP' | 'SSE';

const APP_PROTOCOL_PREFIXES = ['gw.dev/', 'agentgateway.dev/', 'kgateway.dev/'] as const;
const PROTOCOLS: Record<string, Protocol> = { mcp: 'StreamableHTTP', 'mcp-sse': 'SSE' };

/** The MCP protocol a Service port's appProtocol names, if it names one. */
export function mcpAppProtocol(appProtocol: string | undefined): Protocol | undefined {
  const prefix = APP_PROTOCOL_PREFIXES.find((p) => appProtocol?.startsWith(p));
  return prefix && appProtocol ? PROTOCOLS[appProtocol.slice(prefix.length)] : undefined;
}

/** The path annotation of a Service, gw's first. */
function mcpPath(svc: KubeObject): string | undefined {
  for (const p of APP_PROTOCOL_PREFIXES) {
    const v = svc.metadata.annotations?.[`${p}mcp-path`];
    if (v) return v;
  }
  return undefined;
}

/** One target of the proto's Mcp message (proto3 JSON). */
export interface McpTargetJson {
  name: string;
  host: string;
  port: number;
  path?: string;
  protocol: Protocol;
  policies?: BackendPolicies;
}

export type McpResult =
  | {
      ok: true;
      mcp: { targets: McpTargetJson[]; sessionRouting: string; failureMode: string; prefixMode: string };
      /** CRD target name (a GwPolicy's sectionName) → the names of the targets it became. */
      sections: Map<string, string[]>;
      problems: string[];
    }
  | { ok: false; reason: 'Invalid' | 'InvalidReference'; message: string };

interface ServicePort {
  name?: string;
  port: number;
  appProtocol?: string;
}

export function translateMcp(
  spec: McpSpec,
  namespace: string,
  lookup: Lookup,
  clusterDomain: string,
  /** What GwPolicies on a Service give the targets on it. */
  onService?: ServicePolicyLookup,
): McpResult {
  const targets: McpTargetJson[] = [];
  const sections = new Map<string, string[]>();
  const problems: string[] = [];
  const taken = new Map<string, string>();
  /** Adds a target unless its name is taken or unusable as a prefix; `from` names it in problems. */
  const add = (section: string, t: McpTargetJson, from: string): void => {
    const named = StandaloneMcpTarget.shape.name.safeParse(t.name);
    if (!named.success) {
      problems.push(`${from}: target name ${quote(t.name)}: ${named.error.issues[0]?.message ?? 'invalid'}`);
      return;
    }
    const other = taken.get(t.name);
    if (other) {
      problems.push(`${from}: target name ${quote(t.name)} is also the name of ${other}`);
      return;
    }
    taken.set(t.name, from);
    targets.push(t);
    sections.get(section)?.push(t.name);
  };

  for (const [i, t] of spec.targets.entries()) {
    const field = `spec.mcp.targets[${i}]`;
    sections.set(t.name, []);
    if (t.static) {
      const s = t.static;
      // the proxy's rule for a name that prefixes tool names, in its words
      const named = StandaloneMcpTarget.shape.name.safeParse(t.name);
      if (!named.success)
        return { ok: false, reason: 'Invalid', message: `${field}.name: ${named.error.issues[0]?.message}` };
      let policies: BackendPolicies | undefined;
      if (s.policies) {
        const path = ['spec', 'mcp', 'targets', i, 'static', 'policies'];
        const p = backendPolicy(
          s.policies,
          namespace,
          lookup,
          `mcp.targets[${i}].static.policies`,
          path,
          'GwBackend',
        );
        if (p.invalid.length > 0)
          return { ok: false, reason: 'Invalid', message: describeProblems(p.invalid) };
        if (p.failClosed) return { ok: false, reason: 'InvalidReference', message: p.problems.join('; ') };
        problems.push(...p.problems);
        if (p.policies.mcpGuardrails) {
          // processors are one chain in front of the whole federation
          problems.push(
            `${field}.static.policies.mcp.guardrails: applies to the whole backend, not one target`,
          );
          delete p.policies.mcpGuardrails;
        }
        const taken = mcpTargetTakes(p.policies, s.protocol, `${field}.static.policies`, problems);
        if (taken) policies = taken;
      }
      let host = s.host;
      if (s.backendRef) {
        if (!lookup.get('Service', namespace, s.backendRef.name)) {
          problems.push(`${field}.static.backendRef: Service ${namespace}/${s.backendRef.name} not found`);
          continue;
        }
        host = `${s.backendRef.name}.${namespace}.svc.${clusterDomain}`;
        const attached = onService?.(namespace, s.backendRef.name, s.port);
        if (attached?.problem) {
          problems.push(
            `${field}.static.backendRef: Service ${namespace}/${s.backendRef.name} is not usable: ${attached.problem}`,
          );
          continue;
        }
        // the GwPolicies on the Service, under the target's own policies (which win a field)
        const fromService =
          attached?.policies &&
          mcpTargetTakes(
            structuredClone(attached.policies) as BackendPolicies,
            s.protocol,
            `${field}.static.backendRef (GwPolicies on Service ${s.backendRef.name})`,
            problems,
          );
        if (fromService) policies = { ...fromService, ...policies };
      }
      add(
        t.name,
        {
          name: t.name,
          host: host ?? '',
          port: s.port,
          ...(s.path ? { path: s.path } : {}),
          protocol: s.protocol,
          ...(policies ? { policies } : {}),
        },
        `${field} (${t.name})`,
      );
      continue;
    }
    const sel = t.selector;
    if (!sel) continue; // the schema requires one of static or selector
    const namespaces = sel.namespaces
      ? lookup
          .list('Namespace')
          .filter((n) => matchesLabels(n.metadata.labels, sel.namespaces))
          .map((n) => n.metadata.name)
      : [namespace];
    const services = namespaces
      .flatMap((ns) => lookup.list('Service', ns))
      .filter((svc) => matchesLabels(svc.metadata.labels, sel.services))
      .sort((a, b) =>
        `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(
          `${b.metadata.namespace}/${b.metadata.name}`,
        ),
      );
    const before = targets.length;
    for (const svc of services) {
      const svcNs = svc.metadata.namespace ?? 'default';
      const ports = (svc.spec as { ports?: ServicePort[] } | undefined)?.ports ?? [];
      const path = mcpPath(svc);
      for (const port of ports) {
        const protocol = mcpAppProtocol(port.appProtocol);
        if (!protocol) continue;
        const from = `${field} (${t.name}) Service ${svcNs}/${svc.metadata.name} port ${port.name || port.port}`;
        const attached = onService?.(svcNs, svc.metadata.name, port.port);
        if (attached?.problem) {
          problems.push(`${from}: not usable: ${attached.problem}`);
          continue;
        }
        const policies =
          attached?.policies &&
          mcpTargetTakes(
            structuredClone(attached.policies) as BackendPolicies,
            protocol,
            `${from} (its GwPolicies)`,
            problems,
          );
        add(
          t.name,
          {
            name: `${svc.metadata.name}-${port.name || port.port}`,
            host: `${svc.metadata.name}.${svcNs}.svc.${clusterDomain}`,
            port: port.port,
            ...(path ? { path } : {}),
            protocol,
            ...(policies ? { policies } : {}),
          },
          from,
        );
      }
    }
    if (targets.length === before)
      problems.push(
        `${field}.selector (${t.name}): no Service port with appProtocol gw.dev/mcp or gw.dev/mcp-sse matches`,
      );
  }
  if (targets.length === 0)
    return {
      ok: false,
      reason: 'InvalidReference',
      message: `no MCP target to serve: ${problems.join('; ')}`,
    };
  return {
    ok: true,
    mcp: {
      targets,
      sessionRouting: spec.sessionRouting,
      failureMode: spec.failureMode,
      prefixMode: spec.prefixMode,
    },
    sections,
    problems,
  };
}

/**
 * What the proxy sends an MCP target of `policies` (changed in place): its connection's settings and
 * the headers it is given (a key, or the client's token passed through, streamable HTTP only: called
 * per request); the rest is named in `problems` at `field`. Undefined when nothing is left.
 */
function mcpTargetTakes(
  policies: BackendPolicies,
  protocol: string,
  field: string,
  problems: string[],
): BackendPolicies | undefined {
  for (const k of Object.keys(policies) as (keyof BackendPolicies)[]) {
    const auth = k === 'backendAuth' ? policies.backendAuth : undefined;
    const authTaken =
      typeof auth === 'object' &&
      auth !== null &&
      ('key' in auth || ('passthrough' in auth && protocol !== 'SSE'));
    if (MCP_TARGET_POLICIES.has(k) && (k !== 'backendAuth' || authTaken)) continue;
    problems.push(
      `${field}: ${k === 'backendAuth' ? 'auth other than a key or passthrough (streamable HTTP)' : k} on an MCP target is not supported by this build of gw yet`,
    );
    delete policies[k];
  }
  return Object.keys(policies).length > 0 ? policies : undefined;
}
