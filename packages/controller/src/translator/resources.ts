// Per Gateway: the xDS resources (binds per port, routes, the GwBackends and InferencePools its routes
// use, attached policies, frontend policies), sorted by name, and the status of the Gateway and its ListenerSets.
import { type Attachments, mergeBackendPolicies } from './attachment.ts';
import type { BackendInfo } from './backends.ts';
import { bad, ok } from './conditions.ts';
import { GATEWAY_GROUP, type GatewayInfo, gatewayStatus } from './gateways.ts';
import type { PoolInfo } from './inference-pools.ts';
import type { McpResult } from './mcp.ts';
import type { BackendPolicies } from './policy/spec.ts';
import type { RouteResult } from './routes.ts';
import type { NamedResource, StatusUpdate } from './types.ts';

export function gatewayResources(
  g: GatewayInfo,
  routes: RouteResult,
  backends: Map<string, BackendInfo>,
  attachments: Attachments,
  /** What models.ts adds: the model routes of listeners and the `llmModels` backends. */
  models: NamedResource[] = [],
  /** InferencePools by `<ns>/<name>` (inference-pools.ts), when the inference extension is on. */
  pools?: Map<string, PoolInfo>,
): NamedResource[] {
  const resources: NamedResource[] = [...models];
  const listeners = [...g.listeners, ...g.listenerSets.flatMap((s) => s.listeners)].filter((l) => l.ready);
  const ports = [...new Set(listeners.map((l) => l.port))].sort((a, b) => a - b);
  for (const port of ports) {
    resources.push({
      name: `bind/${port}`,
      resource: {
        bind: {
          port,
          listeners: listeners
            .filter((l) => l.port === port)
            .map((l) => ({
              name: `${g.key}/${l.name}`,
              gateway: g.key,
              // a TCP listener matches no name (gateways.ts leaves its hostname out)
              ...(l.hostname ? { hostname: l.hostname } : {}),
              protocol: l.protocol,
              ...(l.tls ? { tls: { certPem: l.tls.certPem, keyPem: l.tls.keyPem } } : {}),
            })),
        },
      },
    });
  }
  const rules = routes.rules.filter((r) => r.gateway === g.key);
  for (const r of rules) resources.push(r.resource);
  const tcpRules = routes.tcpRules.filter((r) => r.gateway === g.key);
  for (const r of tcpRules) resources.push(r.resource);
  const used = [...rules, ...tcpRules].flatMap((r) => r.backends);
  // each InferencePool the rules send to, with its endpoint picker
  for (const key of [...new Set(rules.flatMap((r) => r.inferencePools))].sort()) {
    const p = pools?.get(key);
    if (!p?.resource) continue;
    resources.push(p.resource);
    if (p.picker) resources.push(p.picker);
  }
  for (const bkey of [...new Set(used)].sort()) {
    const b = backends.get(bkey);
    if (!b?.target) continue;
    // inline GwBackend policies win over GwPolicy backend sections for the same field
    const { ai, ...extra } = attachments.backendExtra.get(bkey) ?? {};
    const merged = mergeBackendPolicies(extra, b.policies);
    let target =
      ai && 'ai' in b.target ? { ai: withProviderAi(b.target.ai, ai as Record<string, unknown>) } : b.target;
    const perTarget = attachments.mcpTargetExtra.get(bkey);
    if (perTarget && 'mcp' in b.target && b.mcpSections)
      target = { mcp: withTargetPolicies(b.target.mcp as McpJson, b.mcpSections, perTarget) };
    resources.push({
      name: `backend/${bkey}`,
      resource: {
        backend: {
          name: bkey,
          ...target,
          ...(Object.keys(merged).length > 0 ? { policies: merged } : {}),
        },
      },
    });
  }
  for (const a of attachments.resources.filter((x) => x.gateway === g.key)) resources.push(a.resource);
  const fe = attachments.frontends.get(g.key);
  if (fe && Object.keys(fe).length > 0)
    resources.push({ name: 'frontend', resource: { frontend: { policies: fe } } });
  resources.sort((a, b) => a.name.localeCompare(b.name));
  return resources;
}

/** The Gateway's status and each of its ListenerSets'. */
export function gatewayStatuses(g: GatewayInfo): StatusUpdate[] {
  const out: StatusUpdate[] = [
    {
      kind: 'Gateway',
      namespace: g.object.metadata.namespace ?? 'default',
      name: g.object.metadata.name,
      status: gatewayStatus(g),
    },
  ];
  for (const s of g.listenerSets) {
    out.push({
      kind: s.object.kind,
      namespace: s.object.metadata.namespace ?? 'default',
      name: s.object.metadata.name,
      status: {
        conditions: [
          s.accepted,
          s.accepted.status === 'True'
            ? ok('Programmed', 'Programmed', 'sent to the proxies', s.object.metadata.generation)
            : bad('Programmed', 'Invalid', 'not attached', s.object.metadata.generation),
        ],
        listeners: s.listeners.map((l) => ({
          name: l.name,
          attachedRoutes: l.attachedRoutes,
          supportedKinds: l.allowedRoutes.kinds.map((kind) => ({ group: GATEWAY_GROUP, kind })),
          conditions: l.conditions,
        })),
      },
    });
  }
  return out;
}

/**
 * A GwPolicy's backend.ai on an ai backend: each provider (one, or those of every group) gets it as
 * its policies.ai, unless the GwBackend gave the provider its own (the inline setting wins).
 */
function withProviderAi(target: unknown, ai: Record<string, unknown>): Record<string, unknown> {
  const t = target as Record<string, unknown> & { groups?: { providers: Record<string, unknown>[] }[] };
  type Provider = { policies?: { ai?: { routes?: unknown } } };
  const providers = (t.groups?.flatMap((g) => g.providers) ?? [t]) as Provider[];
  // Which API a path is holds for the whole backend: the policy's routes reach the providers with an
  // ai policy of their own too, unless the GwBackend set routes itself (the inline setting wins).
  const routes = providers.some((p) => p.policies?.ai?.routes) ? undefined : ai.routes;
  const give = (p: Record<string, unknown>) => {
    const policies = (p.policies as Record<string, unknown> | undefined) ?? {};
    const own = policies.ai as Record<string, unknown> | undefined;
    if (!own) return { ...p, policies: { ...policies, ai } };
    return routes ? { ...p, policies: { ...policies, ai: { ...own, routes } } } : p;
  };
  if (t.groups) return { ...t, groups: t.groups.map((g) => ({ ...g, providers: g.providers.map(give) })) };
  return give(t);
}

type McpJson = Extract<McpResult, { ok: true }>['mcp'];

/**
 * GwPolicy backend sections addressed to one MCP target (by sectionName) on the targets it became;
 * a static target's inline policies win over them for the same field.
 */
function withTargetPolicies(
  mcp: McpJson,
  sections: Map<string, string[]>,
  extra: Map<string, Record<string, unknown>>,
): McpJson {
  const byTarget = new Map<string, Record<string, unknown>>();
  for (const [section, policies] of extra)
    for (const name of sections.get(section) ?? []) byTarget.set(name, policies);
  return {
    ...mcp,
    targets: mcp.targets.map((t) => {
      const policies = byTarget.get(t.name);
      return policies
        ? { ...t, policies: mergeBackendPolicies(structuredClone(policies), t.policies) as BackendPolicies }
        : t;
    }),
  };
}
