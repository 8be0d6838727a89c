// GwPolicy attachment: each policy is validated and its sections mapped once, then attached to its
// targets (Gateways or their listeners, HTTPRoutes/GRPCRoutes, GwBackends) as Policy resources of the
// Gateways those targets belong to, with an ancestor status per target. A backend section targeting a
// Service goes with the route backends to that Service (servicePolicies).
//
// A policy the schema or @gw/api's checks refuse is not attached: Accepted and Attached are False
// with reason Invalid and the field paths at fault, and the rest of the Gateway's configuration ships
// without it. A refused policy that would have controlled access (authorization, authentication,
// ext_authz, network authorization) leaves a deny-all rule on its targets instead, so a typo in a
// rule never opens what the rule was meant to close.

import {
  type BackendPolicies,
  GATEWAY_PHASE_POLICY_NAMES,
  GATEWAY_PHASE_UNKNOWN,
  GATEWAY_PHASE_WHY,
  gatewayPhaseReadsRequest,
  type Problem,
  type TrafficPolicies,
  withUnavailable,
} from '@gw/api';
import { validateResource } from '@gw/api/crd/crds';
import type { GwPolicySpec } from '@gw/api/crd/gwpolicy';
import { formatError } from '@gw/api/crd/validate';
import { type BackendTlsPolicies, backendTlsPolicies, withBackendTls } from './backend-tls-policy.ts';
import type { BackendInfo } from './backends.ts';
import { bad, ok } from './conditions.ts';
import { GATEWAY_GROUP, type GatewayInfo, key } from './gateways.ts';
import { backendPolicy } from './policy/backend.ts';
import { denyAll, type ServicePolicyLookup } from './policy/context.ts';
import { frontendPolicy } from './policy/frontend.ts';
import type { BackendPolicyResult, PolicyResult } from './policy/result.ts';
import type { FrontendPolicies } from './policy/spec.ts';
import { ACCESS_CONTROL, trafficPolicy } from './policy/traffic.ts';
import { describeProblems } from './problems.ts';
import type { AttachedRule, RouteResult } from './routes.ts';
import type { Condition, KubeObject, Lookup, NamedResource, StatusUpdate } from './types.ts';
import { GW_GROUP } from './types.ts';

interface TargetRef {
  group: string;
  kind: string;
  name: string;
  sectionName?: string;
  port?: number;
}

/** A GwPolicy after validation and mapping, before attachment. */
export interface CheckedPolicy {
  object: KubeObject;
  validation: ReturnType<typeof validateResource>;
  traffic?: PolicyResult<TrafficPolicies>;
  frontend?: PolicyResult<FrontendPolicies>;
  backend?: BackendPolicyResult<BackendPolicies>;
  /** What @gw/api's checks refused in any section. */
  invalid: Problem[];
}

/** A PreRouting section's expressions are checked as the gateway phase's (no route.* yet). */
function traffic<T>(spec: NonNullable<GwPolicySpec['traffic']>, map: () => T): T {
  return spec.phase === 'PreRouting'
    ? withUnavailable(GATEWAY_PHASE_UNKNOWN, GATEWAY_PHASE_WHY, gatewayPhaseReadsRequest, map)
    : map();
}

/**
 * Validates every GwPolicy and maps its sections. The traffic and frontend sections of the valid ones
 * are mapped again with what the GwPolicies on a Service give the Services they call (extAuth,
 * extProc, rate limits, OTLP collectors): only policies that are valid as a whole give anything.
 * That lookup is returned too, for the route backends and MCP targets on a Service.
 */
export function checkPolicies(
  objects: KubeObject[],
  lookup: Lookup,
): { policies: CheckedPolicy[]; services: ServicePolicyLookup; backendTls: BackendTlsPolicies } {
  const checked = objects
    .filter((o) => o.kind === 'GwPolicy')
    .map((p) => {
      const validation = validateResource(p);
      const c: CheckedPolicy = { object: p, validation, invalid: [] };
      if (!validation.ok) return c;
      const spec = validation.spec as GwPolicySpec;
      const ns = p.metadata.namespace ?? 'default';
      if (spec.traffic) c.traffic = traffic(spec.traffic, () => trafficPolicy(spec.traffic!, ns, lookup));
      if (spec.frontend) c.frontend = frontendPolicy(spec.frontend, ns, lookup);
      if (spec.backend) c.backend = backendPolicy(spec.backend, ns, lookup);
      c.invalid = invalidOf(c);
      return c;
    });
  // BackendTLSPolicies on a Service apply to the same calls, under a GwPolicy's own backend settings
  const backendTls = backendTlsPolicies(objects, lookup);
  const services = withBackendTls(servicePolicies(checked, objects, lookup), backendTls);
  for (const c of checked) {
    if (!c.validation.ok || c.invalid.length > 0) continue;
    const spec = c.validation.spec as GwPolicySpec;
    const ns = c.object.metadata.namespace ?? 'default';
    if (spec.traffic)
      c.traffic = traffic(spec.traffic, () => trafficPolicy(spec.traffic!, ns, lookup, 'traffic', services));
    if (spec.frontend) c.frontend = frontendPolicy(spec.frontend, ns, lookup, 'frontend', services);
    c.invalid = invalidOf(c);
  }
  return { policies: checked, services, backendTls };
}

function invalidOf(c: CheckedPolicy): Problem[] {
  return [...(c.traffic?.invalid ?? []), ...(c.frontend?.invalid ?? []), ...(c.backend?.invalid ?? [])];
}

/**
 * A GwPolicy backend section that cannot be honoured (e.g. a CA that is missing) makes its GwBackend
 * unusable rather than letting traffic go out without it.
 */
export function failClosedBackends(policies: CheckedPolicy[], backends: Map<string, BackendInfo>): void {
  for (const c of policies) {
    if (!c.validation.ok || !c.backend?.failClosed || c.invalid.length > 0) continue;
    const spec = c.validation.spec as { targetRefs?: TargetRef[] };
    const ns = c.object.metadata.namespace ?? 'default';
    for (const t of spec.targetRefs ?? []) {
      const b = t.group === GW_GROUP && t.kind === 'GwBackend' ? backends.get(`${ns}/${t.name}`) : undefined;
      if (!b?.usable) continue;
      b.usable = false;
      b.failedBy = key(c.object);
      b.accepted = bad(
        'Accepted',
        'InvalidReference',
        `GwPolicy ${key(c.object)}: ${c.backend.problems.join('; ')}`,
        b.object.metadata.generation,
      );
    }
  }
}

/** Backend policy keys that belong to one backend kind (an LLM provider, an MCP backend), not a Service. */
const KIND_ONLY_BACKEND_KEYS = ['ai', 'mcpAuthorization', 'mcpAuthentication', 'mcpGuardrails'] as const;

/**
 * GwPolicy backend sections whose targets are Services (`sectionName`: one port, by its name or number): what
 * each route backend to a port of that Service gets as its policies (routes.ts). Kind-only keys
 * (`ai`, `mcp`) are left out (attachOne reports them).
 */
export function servicePolicies(
  policies: CheckedPolicy[],
  objects: KubeObject[],
  lookup: Lookup,
): ServicePolicyLookup {
  const entries = new Map<string, { port?: number; policies: Record<string, unknown>; problem?: string }[]>();
  for (const c of byAge(policies)) {
    const backend = c.backend?.policies as Record<string, unknown> | undefined;
    // a policy @gw/api's checks refused is not attached (its status says why), as on a GwBackend
    if (!c.validation.ok || c.invalid.length > 0 || !c.backend || (!backend && !c.backend.failClosed))
      continue;
    const ns = c.object.metadata.namespace ?? 'default';
    const own = { ...backend };
    for (const k of KIND_ONLY_BACKEND_KEYS) delete own[k];
    for (const t of resolveTargets(c.validation.spec as GwPolicySpec, objects, ns)) {
      if (t.group !== '' || t.kind !== 'Service') continue;
      // one port: by its name (sectionName) or its number (port)
      const port = t.sectionName ? servicePort(lookup.get('Service', ns, t.name), t.sectionName) : t.port;
      if (t.sectionName && port === undefined) continue;
      const list = entries.get(`${ns}/${t.name}`) ?? [];
      const failed = c.backend.failClosed;
      list.push({
        ...(port !== undefined ? { port } : {}),
        policies: failed ? {} : own,
        ...(failed ? { problem: `GwPolicy ${key(c.object)}: ${c.backend.problems.join('; ')}` } : {}),
      });
      entries.set(`${ns}/${t.name}`, list);
    }
  }
  return (namespace, name, port) => {
    let merged: Record<string, unknown> | undefined;
    for (const e of entries.get(`${namespace}/${name}`) ?? []) {
      if (e.port !== undefined && e.port !== port) continue;
      if (e.problem) return { problem: e.problem };
      if (Object.keys(e.policies).length > 0) merged = mergeBackendPolicies(merged, e.policies);
    }
    return merged ? { policies: merged } : {};
  };
}

/** The port of a Service named `portName` in its spec. */
function servicePort(svc: KubeObject | undefined, section: string): number | undefined {
  const ports = (svc?.spec as { ports?: { name?: string; port: number }[] } | undefined)?.ports ?? [];
  const named = ports.find((p) => p.name === section)?.port;
  if (named !== undefined) return named;
  // agentgateway's form, the port's number: a port name has a letter in it, so the two never clash
  return /^\d+$/.test(section) ? ports.find((p) => p.port === Number(section))?.port : undefined;
}

/** Newest first: later layers override earlier ones, so the oldest policy wins a field two set. */
function byAge(policies: CheckedPolicy[]): CheckedPolicy[] {
  return [...policies].sort(
    (a, b) =>
      (b.object.metadata.creationTimestamp ?? '').localeCompare(a.object.metadata.creationTimestamp ?? '') ||
      key(a.object).localeCompare(key(b.object)),
  );
}

export interface AttachContext {
  objects: KubeObject[];
  gateways: GatewayInfo[];
  routes: RouteResult;
  backends: Map<string, BackendInfo>;
  controllerName: string;
}

export interface Attachments {
  /** Policy resources per Gateway key. */
  resources: { gateway: string; resource: NamedResource }[];
  /** Gateway key → merged frontend policies. */
  frontends: Map<string, Record<string, unknown>>;
  /** GwBackend key → backend policies from GwPolicies (inline GwBackend policies win over these). */
  backendExtra: Map<string, Record<string, unknown>>;
  /**
   * GwBackend key → MCP target name (a sectionName) → backend policies from GwPolicies for that
   * target alone (a static target's inline policies win over these).
   */
  mcpTargetExtra: Map<string, Map<string, Record<string, unknown>>>;
  statuses: StatusUpdate[];
}

/** Attaches every checked policy to its targets; the oldest policy wins a field two of them set. */
export function attachPolicies(policies: CheckedPolicy[], ctx: AttachContext): Attachments {
  const out: Attachments = {
    resources: [],
    frontends: new Map(),
    backendExtra: new Map(),
    mcpTargetExtra: new Map(),
    statuses: [],
  };
  byAge(policies).forEach((c, order) => {
    attachOne(c, order, ctx, out);
  });
  return out;
}

function attachOne(c: CheckedPolicy, order: number, ctx: AttachContext, out: Attachments): void {
  const p = c.object;
  const ns = p.metadata.namespace ?? 'default';
  const gen = p.metadata.generation;
  const v = c.validation;
  const ancestors: Record<string, unknown>[] = [];
  const ancestor = (t: TargetRef, conditions: Condition[]) =>
    ancestors.push({
      ancestorRef: {
        group: t.group,
        kind: t.kind,
        namespace: ns,
        name: t.name,
        ...(t.sectionName ? { sectionName: t.sectionName } : {}),
        ...(t.port ? { port: t.port } : {}),
      },
      controllerName: ctx.controllerName,
      conditions,
    });
  const raw = p.spec as { targetRefs?: TargetRef[] };
  if (!v.ok) {
    const message = v.errors.map(formatError).join('; ');
    for (const t of raw?.targetRefs ?? []) {
      ancestor(t, [
        bad('Accepted', 'Invalid', message, gen),
        bad('Attached', 'Invalid', 'not attached: the policy is invalid', gen),
      ]);
    }
    out.statuses.push({ kind: 'GwPolicy', namespace: ns, name: p.metadata.name, status: { ancestors } });
    return;
  }
  const spec = v.spec as GwPolicySpec;
  const targets = resolveTargets(spec, ctx.objects, ns);
  let traffic = c.traffic?.policies;
  let frontend = c.frontend?.policies;
  let backend = c.backend?.policies;
  let accepted = ok('Accepted', 'Accepted', 'valid', gen);
  let attached = (targetDesc: string, problems: string[]) =>
    problems.length === 0
      ? ok('Attached', 'Attached', `attached to ${targetDesc}`, gen)
      : ok('Attached', 'PartiallyAttached', `attached to ${targetDesc} without: ${problems.join('; ')}`, gen);
  if (c.invalid.length > 0) {
    const message = describeProblems(c.invalid);
    const denyTraffic =
      spec.traffic !== undefined && ACCESS_CONTROL.some((k) => spec.traffic?.[k] !== undefined);
    const denyFrontend = spec.frontend?.networkAuthorization !== undefined;
    const denyMcp =
      spec.backend?.mcp?.authorization !== undefined || spec.backend?.mcp?.authentication !== undefined;
    traffic = denyTraffic ? { authorization: denyAll() } : undefined;
    frontend = denyFrontend ? { networkAuthorization: denyAll() } : undefined;
    backend = denyMcp ? { mcpAuthorization: { rules: [{ deny: 'true' }] } } : undefined;
    const denials = [
      ...(denyTraffic ? ['its targets deny every request'] : []),
      ...(denyFrontend ? ['the Gateway refuses every connection'] : []),
      ...(denyMcp ? ['its MCP targets refuse every tool, prompt and resource'] : []),
    ];
    const denied = denials.length > 0 ? `; until it is fixed, ${denials.join(' and ')}` : '';
    accepted = bad('Accepted', 'Invalid', message, gen);
    attached = () => bad('Attached', 'Invalid', `not attached: ${message}${denied}`, gen);
  }
  // PreRouting: the section runs before routing, on its own; what the gateway phase does not take
  // (a field that translates to another policy) is left out and named
  const preRouting = spec.traffic?.phase === 'PreRouting';
  const preRoutingProblems: string[] = [];
  if (preRouting && traffic) {
    const allowed: readonly string[] = GATEWAY_PHASE_POLICY_NAMES;
    const kept: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(traffic)) {
      if (allowed.includes(k)) kept[k] = v;
      else preRoutingProblems.push(`${k} does not run in phase PreRouting`);
    }
    traffic = kept as typeof traffic;
    if (spec.strategy?.inheritance)
      preRoutingProblems.push(
        'strategy.inheritance applies to PostRouting policies (a PreRouting policy is not merged)',
      );
  }
  const sectionProblems = [
    ...preRoutingProblems,
    ...(c.traffic?.problems ?? []),
    ...(c.frontend?.problems ?? []),
    ...(c.backend?.problems ?? []),
  ];
  for (const [ti, t] of targets.entries()) {
    const problems = [...sectionProblems];
    const notAttached = (reason: 'TargetNotFound' | 'Unsupported' | 'InvalidReference', message: string) => {
      ancestor(t, [accepted, bad('Attached', reason, message, gen)]);
    };
    const name = `policy/${String(order).padStart(4, '0')}/${ns}/${p.metadata.name}/${ti}`;
    /** The traffic section as a Policy resource for `target`, in each of `gatewayKeys`. */
    const attachTraffic = (gatewayKeys: Iterable<string>, target: Record<string, string>, part = '') => {
      if (!traffic || Object.keys(traffic).length === 0) return;
      const policy = preRouting
        ? { name: `${ns}/${p.metadata.name}`, target, traffic, preRouting: true }
        : {
            name: `${ns}/${p.metadata.name}`,
            target,
            traffic,
            // a backend's traffic policies merge without it (agentgateway's backend policies do too)
            ...(spec.strategy?.inheritance === 'Override' && !('backend' in target)
              ? { override: true }
              : {}),
          };
      for (const gateway of gatewayKeys)
        out.resources.push({ gateway, resource: { name: `${name}${part}`, resource: { policy } } });
    };
    if (t.group === GATEWAY_GROUP && t.kind === 'Gateway') {
      const g = ctx.gateways.find((x) => x.key === `${ns}/${t.name}`);
      if (!g) {
        notAttached('TargetNotFound', `Gateway ${ns}/${t.name} not found or not of a gw GatewayClass`);
        continue;
      }
      const listener = t.sectionName
        ? [...g.listeners, ...g.listenerSets.flatMap((s) => s.listeners)].find(
            (l) => l.name === t.sectionName,
          )
        : undefined;
      if (t.sectionName && !listener) {
        notAttached('TargetNotFound', `Gateway ${g.key} has no listener ${t.sectionName}`);
        continue;
      }
      attachTraffic([g.key], listener ? { listener: `${g.key}/${listener.name}` } : { gateway: g.key });
      if (frontend) {
        if (t.port || t.sectionName)
          problems.push('frontend policies apply to every port of the Gateway in this build');
        // newest first, so assigning in order leaves the oldest value of each field
        out.frontends.set(g.key, {
          ...(out.frontends.get(g.key) ?? {}),
          ...(frontend as Record<string, unknown>),
        });
      }
      if (backend) problems.push('backend policies attach to GwBackends only in this build');
      ancestor(t, [
        accepted,
        attached(`Gateway ${g.key}${listener ? ` listener ${listener.name}` : ''}`, problems),
      ]);
    } else if (t.group === GATEWAY_GROUP && t.kind === 'ListenerSet') {
      // the set's listeners (or the one sectionName names), as listeners of the Gateway it joined
      const found = ctx.gateways
        .map((g) => ({
          g,
          set: g.listenerSets.find(
            (s) => s.object.metadata.name === t.name && (s.object.metadata.namespace ?? 'default') === ns,
          ),
        }))
        .find((x) => x.set !== undefined);
      if (!found?.set) {
        notAttached(
          'TargetNotFound',
          `ListenerSet ${ns}/${t.name} not found on a Gateway of a gw GatewayClass`,
        );
        continue;
      }
      const { g, set } = found;
      if (set.listeners.length === 0) {
        notAttached('TargetNotFound', `ListenerSet ${ns}/${t.name} is not accepted by Gateway ${g.key}`);
        continue;
      }
      const listeners = t.sectionName ? set.listeners.filter((l) => l.name === t.sectionName) : set.listeners;
      if (listeners.length === 0) {
        notAttached('TargetNotFound', `ListenerSet ${ns}/${t.name} has no listener ${t.sectionName}`);
        continue;
      }
      // one resource per listener, each named apart
      for (const l of listeners) attachTraffic([g.key], { listener: `${g.key}/${l.name}` }, `/${l.name}`);
      if (frontend) problems.push('frontend policies attach to Gateways only');
      if (backend) problems.push('backend policies attach to GwBackends only in this build');
      ancestor(t, [
        accepted,
        attached(`ListenerSet ${ns}/${t.name}${t.sectionName ? ` listener ${t.sectionName}` : ''}`, problems),
      ]);
    } else if (t.group === GATEWAY_GROUP && (t.kind === 'HTTPRoute' || t.kind === 'GRPCRoute')) {
      const rules = ctx.routes.rules.filter(
        (r) => r.route.kind === t.kind && key(r.route) === `${ns}/${t.name}`,
      );
      if (rules.length === 0) {
        notAttached('TargetNotFound', `${t.kind} ${ns}/${t.name} not found or not attached to a gw Gateway`);
        continue;
      }
      // sectionName: one rule of the route, by its name (the proxy keys a rule as <ns>/<route>/<rule>)
      const ruleRules = t.sectionName ? rules.filter((r) => ruleNameOf(r) === t.sectionName) : rules;
      if (t.sectionName && ruleRules.length === 0) {
        notAttached('TargetNotFound', `${t.kind} ${ns}/${t.name} has no rule named ${t.sectionName}`);
        continue;
      }
      if (backend) problems.push('backend policies attach to GwBackends only in this build');
      if (frontend) problems.push('frontend policies attach to Gateways only');
      const target = t.sectionName ? `${ns}/${t.name}/${t.sectionName}` : `${ns}/${t.name}`;
      attachTraffic(new Set(ruleRules.map((r) => r.gateway)), { route: target });
      ancestor(t, [
        accepted,
        attached(`${t.kind} ${ns}/${t.name}${t.sectionName ? ` rule ${t.sectionName}` : ''}`, problems),
      ]);
    } else if (t.group === GW_GROUP && t.kind === 'GwBackend') {
      const b = ctx.backends.get(`${ns}/${t.name}`);
      if (!b) {
        notAttached('TargetNotFound', `GwBackend ${ns}/${t.name} not found`);
        continue;
      }
      if (!b.usable && b.failedBy === key(p)) {
        // the policy's own reference (a Secret, a CA) is what keeps its target out of use
        const why = b.accepted.message.slice(`GwPolicy ${b.failedBy}: `.length);
        notAttached('InvalidReference', `${why}; GwBackend ${ns}/${t.name} is not used until it resolves`);
        continue;
      }
      if (!b.usable) {
        notAttached('TargetNotFound', `GwBackend ${ns}/${t.name} is not usable: ${b.accepted.message}`);
        continue;
      }
      // sectionName: one MCP target of an mcp backend, by its name in spec.mcp.targets
      if (t.sectionName && !b.mcpSections) {
        notAttached(
          'Unsupported',
          `sectionName on GwBackend ${b.key} names an MCP target; it is not an mcp backend`,
        );
        continue;
      }
      if (t.sectionName && !b.mcpSections?.has(t.sectionName)) {
        notAttached('TargetNotFound', `GwBackend ${b.key} has no MCP target named ${t.sectionName}`);
        continue;
      }
      if (backend) {
        const { ai, mcpAuthorization, mcpAuthentication, mcpGuardrails, ...rest } = backend as Record<
          string,
          unknown
        >;
        // prompt guards and the like apply to LLM providers: resources.ts moves them into each one
        const isAi = !!b.target && 'ai' in b.target;
        if (ai && !isAi) problems.push('backend.ai applies to ai GwBackends only');
        if ((mcpAuthorization || mcpAuthentication || mcpGuardrails) && !b.mcpSections)
          problems.push('backend.mcp applies to mcp GwBackends only');
        // authentication guards the backend's one endpoint, and processors are one chain in front of
        // the whole federation: neither can be set for one MCP target
        if (mcpAuthentication && b.mcpSections && t.sectionName)
          problems.push('backend.mcp.authentication applies to the whole GwBackend, not one MCP target');
        if (mcpGuardrails && b.mcpSections && t.sectionName)
          problems.push('backend.mcp.guardrails applies to the whole GwBackend, not one MCP target');
        const own = {
          ...rest,
          ...(ai && isAi ? { ai } : {}),
          ...(mcpAuthorization && b.mcpSections ? { mcpAuthorization } : {}),
          ...(mcpAuthentication && b.mcpSections && !t.sectionName ? { mcpAuthentication } : {}),
          ...(mcpGuardrails && b.mcpSections && !t.sectionName ? { mcpGuardrails } : {}),
        };
        if (t.sectionName) {
          const byTarget = out.mcpTargetExtra.get(b.key) ?? new Map<string, Record<string, unknown>>();
          byTarget.set(t.sectionName, mergeBackendPolicies(byTarget.get(t.sectionName), own));
          out.mcpTargetExtra.set(b.key, byTarget);
        } else out.backendExtra.set(b.key, mergeBackendPolicies(out.backendExtra.get(b.key), own));
      }
      if (t.sectionName && traffic && Object.keys(traffic).length > 0)
        problems.push('traffic applies to the whole GwBackend, not one MCP target');
      if (spec.strategy?.inheritance === 'Override')
        problems.push('strategy.inheritance: a GwBackend’s policies merge without it');
      attachTraffic(
        new Set(ctx.routes.rules.filter((r) => r.backends.includes(b.key)).map((r) => r.gateway)),
        { backend: b.key },
      );
      if (frontend) problems.push('frontend policies attach to Gateways only');
      ancestor(t, [
        accepted,
        attached(`GwBackend ${b.key}${t.sectionName ? ` MCP target ${t.sectionName}` : ''}`, problems),
      ]);
    } else if (t.group === '' && t.kind === 'Service') {
      // the backend section goes with every route backend to the Service (servicePolicies, routes.ts)
      const svc = ctx.objects.find(
        (o) =>
          o.kind === 'Service' && (o.metadata.namespace ?? 'default') === ns && o.metadata.name === t.name,
      );
      if (!svc) {
        notAttached('TargetNotFound', `Service ${ns}/${t.name} not found`);
        continue;
      }
      if (t.sectionName && servicePort(svc, t.sectionName) === undefined) {
        notAttached(
          'TargetNotFound',
          `Service ${ns}/${t.name} has no port ${/^\d+$/.test(t.sectionName) ? '' : 'named '}${t.sectionName}`,
        );
        continue;
      }
      const ports = (svc.spec as { ports?: { port: number }[] } | undefined)?.ports ?? [];
      if (t.port !== undefined && !ports.some((p) => p.port === t.port)) {
        notAttached('TargetNotFound', `Service ${ns}/${t.name} has no port ${t.port}`);
        continue;
      }
      const kindOnly = KIND_ONLY_BACKEND_KEYS.filter((k) => backend?.[k] !== undefined);
      if (kindOnly.length > 0)
        problems.push(`${kindOnly.join(', ')} apply to GwBackends of that kind, not to a Service`);
      if (traffic && Object.keys(traffic).length > 0)
        problems.push('traffic attaches to Gateways, routes and GwBackends only in this build');
      if (frontend) problems.push('frontend policies attach to Gateways only');
      ancestor(t, [
        accepted,
        attached(
          `Service ${ns}/${t.name}${t.sectionName ? ` port ${t.sectionName}` : t.port ? ` port ${t.port}` : ''}`,
          problems,
        ),
      ]);
    } else {
      notAttached(
        'Unsupported',
        `targets of kind ${t.group ? `${t.group}/` : ''}${t.kind} are not supported (Gateway, ListenerSet, HTTPRoute, GRPCRoute, Service, gw.dev/GwBackend)`,
      );
    }
  }
  out.statuses.push({
    kind: 'GwPolicy',
    namespace: ns,
    name: p.metadata.name,
    status: { ancestors: ancestors.slice(0, 16) },
  });
}

/**
 * Backend policies of two sources: `over`'s fields win, except mcpAuthorization, whose rules
 * accumulate like every authorization (so a broken policy's deny-all is never overridden).
 */
export function mergeBackendPolicies(
  base: Record<string, unknown> | undefined,
  over: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const out = { ...base, ...over };
  const rules = [base, over].flatMap(
    (p) => (p?.['mcpAuthorization'] as { rules: unknown[] } | undefined)?.rules ?? [],
  );
  if (rules.length > 0) out['mcpAuthorization'] = { rules: structuredClone(rules) };
  return out;
}

/** targetRefs, plus every object of a selector's kind in the policy's namespace with its labels. */
function resolveTargets(spec: GwPolicySpec, objects: KubeObject[], ns: string): TargetRef[] {
  const targets: TargetRef[] = [...((spec.targetRefs ?? []) as TargetRef[])];
  for (const sel of spec.targetSelectors ?? []) {
    for (const o of objects) {
      if (o.kind !== sel.kind || (o.metadata.namespace ?? 'default') !== ns) continue;
      if (!Object.entries(sel.matchLabels).every(([k, val]) => o.metadata.labels?.[k] === val)) continue;
      targets.push({
        group: sel.group,
        kind: sel.kind,
        name: o.metadata.name,
        ...(sel.sectionName ? { sectionName: sel.sectionName } : {}),
        ...(sel.port ? { port: sel.port } : {}),
      });
    }
  }
  return targets;
}

/** The name a rule of an attached route goes by (its `name`; rules without one cannot be targeted). */
function ruleNameOf(r: AttachedRule): string | undefined {
  return (r.resource.resource.route['ruleName'] as string | undefined) ?? undefined;
}
