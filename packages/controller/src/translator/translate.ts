// The translator: a snapshot of watched objects → per-Gateway xDS resources and the status of every
// object we own. Pure (no clock, network or env), so golden tests pin it down case by case.
import { validateResource } from '@gw/api/crd/crds';
import { formatError } from '@gw/api/crd/validate';
import { collectGateways, condition, GATEWAY_GROUP, gatewayStatus, key, ourClasses } from './gateways.ts';
import { inMemoryLookup } from './lookup.ts';
import { backendPolicy, frontendPolicy, trafficPolicy } from './policies.ts';
import { GW_GROUP, translateRoutes } from './routes.ts';
import type { Condition, KubeObject, NamedResource, Output, Snapshot, StatusUpdate } from './types.ts';

const { ok, bad } = condition;

export interface TranslateOptions {
  clusterDomain?: string;
}

/** Group of a kind as ReferenceGrants name it. */
function groupOf(kind: string): string {
  if (kind === 'Service' || kind === 'Secret' || kind === 'ConfigMap') return '';
  if (kind.startsWith('Gw')) return GW_GROUP;
  return GATEWAY_GROUP;
}

function referenceGrants(objects: KubeObject[]) {
  const grants = objects.filter((o) => o.kind === 'ReferenceGrant');
  return (fromKind: string, fromNs: string, toKind: string, toNs: string, toName: string): boolean =>
    grants.some((g) => {
      if ((g.metadata.namespace ?? 'default') !== toNs) return false;
      const spec = g.spec as {
        from?: { group: string; kind: string; namespace: string }[];
        to?: { group: string; kind: string; name?: string }[];
      };
      const fromOk = (spec.from ?? []).some(
        (f) => f.group === groupOf(fromKind) && f.kind === fromKind && f.namespace === fromNs,
      );
      const toOk = (spec.to ?? []).some(
        (t) => t.group === groupOf(toKind) && t.kind === toKind && (!t.name || t.name === toName),
      );
      return fromOk && toOk;
    });
}

interface BackendInfo {
  key: string;
  object: KubeObject;
  target?: Record<string, unknown>;
  /** Inline spec.policies in the standalone shape. */
  policies: Record<string, unknown>;
  problems: string[];
  /** Whether routes may use it. */
  usable: boolean;
  accepted: Condition;
}

function collectBackends(
  objects: KubeObject[],
  lookup: ReturnType<typeof inMemoryLookup>,
): Map<string, BackendInfo> {
  const out = new Map<string, BackendInfo>();
  for (const o of objects.filter((x) => x.kind === 'GwBackend')) {
    const ns = o.metadata.namespace ?? 'default';
    const gen = o.metadata.generation;
    const info: BackendInfo = {
      key: key(o),
      object: o,
      policies: {},
      problems: [],
      usable: false,
      accepted: ok('Accepted', 'Accepted', 'accepted', gen),
    };
    out.set(info.key, info);
    const v = validateResource(o);
    if (!v.ok) {
      info.accepted = bad('Accepted', 'Invalid', v.errors.map(formatError).join('; '), gen);
      continue;
    }
    const spec = v.spec as {
      static?: { host?: string; port?: number; unixPath?: string };
      a2a?: { host: string; port: number };
      dynamicForwardProxy?: object;
      ai?: unknown;
      mcp?: unknown;
      aws?: unknown;
      policies?: unknown;
    };
    if (spec.static?.unixPath) info.target = { host: { host: `unix:${spec.static.unixPath}`, port: 0 } };
    else if (spec.static) info.target = { host: { host: spec.static.host, port: spec.static.port } };
    else if (spec.a2a) info.target = { host: { host: spec.a2a.host, port: spec.a2a.port } };
    else if (spec.dynamicForwardProxy) info.target = { dynamic: {} };
    else {
      const kind = spec.ai ? 'ai' : spec.mcp ? 'mcp' : 'aws';
      info.accepted = bad(
        'Accepted',
        'Unsupported',
        `${kind} backends are not supported by this gw build yet`,
        gen,
      );
      continue;
    }
    if (spec.policies) {
      const p = backendPolicy(spec.policies as never, ns, lookup, 'policies');
      info.policies = p.policies as Record<string, unknown>;
      info.problems.push(...p.problems);
      if (p.failClosed) {
        // a connection setting that cannot be honoured (e.g. a missing CA) must not be dropped silently
        info.accepted = bad('Accepted', 'InvalidReference', info.problems.join('; '), gen);
        continue;
      }
    }
    info.usable = true;
    if (info.problems.length > 0) {
      info.accepted = ok(
        'Accepted',
        'PartiallyAccepted',
        `accepted without: ${info.problems.join('; ')}`,
        gen,
      );
    }
  }
  return out;
}

interface PolicyAttachment {
  gateway: string;
  resource: NamedResource;
}

interface TargetRef {
  group: string;
  kind: string;
  name: string;
  sectionName?: string;
  port?: number;
}

export function translate(snapshot: Snapshot, options: TranslateOptions = {}): Output {
  const objects = snapshot.objects;
  const lookup = inMemoryLookup(objects);
  const grants = referenceGrants(objects);
  const statuses: StatusUpdate[] = [];
  const classes = ourClasses(objects, snapshot.controllerName);
  for (const c of classes) {
    statuses.push({
      kind: 'GatewayClass',
      name: c.metadata.name,
      status: {
        conditions: [
          ok('Accepted', 'Accepted', `handled by ${snapshot.controllerName}`, c.metadata.generation),
        ],
      },
    });
  }
  const gateways = collectGateways(objects, classes, lookup, grants);
  const backends = collectBackends(objects, lookup);
  // A GwPolicy backend section that cannot be honoured (e.g. a CA that is missing) makes its GwBackend
  // unusable rather than letting traffic go out without it.
  // Each GwPolicy is validated, and its backend section mapped, once: here and in the loop below.
  const checked = new Map<KubeObject, ReturnType<typeof validateResource>>();
  const backendSections = new Map<KubeObject, ReturnType<typeof backendPolicy>>();
  for (const p of objects.filter((o) => o.kind === 'GwPolicy')) {
    const v = validateResource(p);
    checked.set(p, v);
    const spec = v.ok ? (v.spec as { targetRefs?: TargetRef[]; backend?: unknown }) : undefined;
    if (!spec?.backend) continue;
    const ns = p.metadata.namespace ?? 'default';
    const result = backendPolicy(spec.backend as never, ns, lookup);
    backendSections.set(p, result);
    if (!result.failClosed) continue;
    for (const t of spec.targetRefs ?? []) {
      const b = t.group === GW_GROUP && t.kind === 'GwBackend' ? backends.get(`${ns}/${t.name}`) : undefined;
      if (!b?.usable) continue;
      b.usable = false;
      b.accepted = bad(
        'Accepted',
        'InvalidReference',
        `GwPolicy ${key(p)}: ${result.problems.join('; ')}`,
        b.object.metadata.generation,
      );
    }
  }
  const routes = translateRoutes(objects, gateways, {
    lookup,
    grants,
    controllerName: snapshot.controllerName,
    clusterDomain: options.clusterDomain ?? 'cluster.local',
    backendProblem: (ns, name) => {
      const b = backends.get(`${ns}/${name}`);
      if (!b) return `GwBackend ${ns}/${name} not found`;
      return b.usable ? undefined : `GwBackend ${ns}/${name} is not usable: ${b.accepted.message}`;
    },
  });

  // GwPolicies: what each target gets, and the policy's status per target.
  const attachments: PolicyAttachment[] = [];
  const frontends = new Map<string, Record<string, unknown>>();
  const backendExtra = new Map<string, Record<string, unknown>>();
  const policies = objects
    .filter((o) => o.kind === 'GwPolicy')
    // newest first: later layers override earlier ones in the proxy, so the oldest policy wins
    .sort(
      (a, b) =>
        (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '') ||
        key(a).localeCompare(key(b)),
    );
  policies.forEach((p, order) => {
    const ns = p.metadata.namespace ?? 'default';
    const gen = p.metadata.generation;
    const v = checked.get(p) ?? validateResource(p);
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
        controllerName: snapshot.controllerName,
        conditions,
      });
    const raw = p.spec as {
      targetRefs?: TargetRef[];
      targetSelectors?: (TargetRef & { matchLabels: Record<string, string> })[];
    };
    if (!v.ok) {
      const message = v.errors.map(formatError).join('; ');
      for (const t of raw?.targetRefs ?? []) {
        ancestor(t, [
          bad('Accepted', 'Invalid', message, gen),
          bad('Attached', 'Invalid', 'not attached: the policy is invalid', gen),
        ]);
      }
      statuses.push({ kind: 'GwPolicy', namespace: ns, name: p.metadata.name, status: { ancestors } });
      return;
    }
    const spec = v.spec as {
      targetRefs?: TargetRef[];
      targetSelectors?: (TargetRef & { matchLabels: Record<string, string> })[];
      traffic?: unknown;
      frontend?: unknown;
      backend?: unknown;
    };
    const targets: TargetRef[] = [...(spec.targetRefs ?? [])];
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
    const traffic = spec.traffic ? trafficPolicy(spec.traffic as never, ns, lookup) : undefined;
    const frontend = spec.frontend ? frontendPolicy(spec.frontend as never, ns, lookup) : undefined;
    const backend = backendSections.get(p);
    const accepted = ok('Accepted', 'Accepted', 'valid', gen);
    for (const [ti, t] of targets.entries()) {
      const problems: string[] = [
        ...(traffic?.problems ?? []),
        ...(frontend?.problems ?? []),
        ...(backend?.problems ?? []),
      ];
      const attached = (targetDesc: string) =>
        problems.length === 0
          ? ok('Attached', 'Attached', `attached to ${targetDesc}`, gen)
          : ok(
              'Attached',
              'PartiallyAttached',
              `attached to ${targetDesc} without: ${problems.join('; ')}`,
              gen,
            );
      const notAttached = (reason: string, message: string) => {
        ancestor(t, [accepted, bad('Attached', reason, message, gen)]);
      };
      const name = `policy/${String(order).padStart(4, '0')}/${ns}/${p.metadata.name}/${ti}`;
      /** The traffic section as a Policy resource for `target`, in each of `gatewayKeys`. */
      const attachTraffic = (gatewayKeys: Iterable<string>, target: Record<string, string>) => {
        if (!traffic || Object.keys(traffic.policies).length === 0) return;
        const policy = { name: `${ns}/${p.metadata.name}`, target, traffic: traffic.policies };
        for (const gateway of gatewayKeys)
          attachments.push({ gateway, resource: { name, resource: { policy } } });
      };
      if (t.group === GATEWAY_GROUP && t.kind === 'Gateway') {
        const g = gateways.find((x) => x.key === `${ns}/${t.name}`);
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
          frontends.set(g.key, {
            ...(frontends.get(g.key) ?? {}),
            ...(frontend.policies as Record<string, unknown>),
          });
        }
        if (backend) problems.push('backend policies attach to GwBackends only in this build');
        ancestor(t, [accepted, attached(`Gateway ${g.key}${listener ? ` listener ${listener.name}` : ''}`)]);
      } else if (t.group === GATEWAY_GROUP && (t.kind === 'HTTPRoute' || t.kind === 'GRPCRoute')) {
        const rules = routes.rules.filter(
          (r) => r.route.kind === t.kind && key(r.route) === `${ns}/${t.name}`,
        );
        if (rules.length === 0) {
          notAttached(
            'TargetNotFound',
            `${t.kind} ${ns}/${t.name} not found or not attached to a gw Gateway`,
          );
          continue;
        }
        if (t.sectionName) {
          notAttached(
            'Unsupported',
            'targeting one rule of a route (sectionName) is not supported by this gw build yet',
          );
          continue;
        }
        if (backend) problems.push('backend policies attach to GwBackends only in this build');
        if (frontend) problems.push('frontend policies attach to Gateways only');
        attachTraffic(new Set(rules.map((r) => r.gateway)), { route: `${ns}/${t.name}` });
        ancestor(t, [accepted, attached(`${t.kind} ${ns}/${t.name}`)]);
      } else if (t.group === GW_GROUP && t.kind === 'GwBackend') {
        const b = backends.get(`${ns}/${t.name}`);
        if (!b) {
          notAttached('TargetNotFound', `GwBackend ${ns}/${t.name} not found`);
          continue;
        }
        if (!b.usable) {
          notAttached('TargetNotFound', `GwBackend ${ns}/${t.name} is not usable: ${b.accepted.message}`);
          continue;
        }
        if (backend)
          backendExtra.set(b.key, {
            ...(backendExtra.get(b.key) ?? {}),
            ...(backend.policies as Record<string, unknown>),
          });
        attachTraffic(new Set(routes.rules.filter((r) => r.backends.includes(b.key)).map((r) => r.gateway)), {
          backend: b.key,
        });
        if (frontend) problems.push('frontend policies attach to Gateways only');
        ancestor(t, [accepted, attached(`GwBackend ${b.key}`)]);
      } else {
        notAttached(
          'Unsupported',
          `targets of kind ${t.group ? `${t.group}/` : ''}${t.kind} are not supported (Gateway, HTTPRoute, GRPCRoute, gw.dev/GwBackend)`,
        );
      }
    }
    statuses.push({
      kind: 'GwPolicy',
      namespace: ns,
      name: p.metadata.name,
      status: { ancestors: ancestors.slice(0, 16) },
    });
  });

  // GwModel (behind the models flag): the data plane has no LLM routing yet, so each parent says so
  // instead of the model silently doing nothing.
  if (snapshot.modelsEnabled) {
    for (const m of objects.filter((o) => o.kind === 'GwModel')) {
      const ns = m.metadata.namespace ?? 'default';
      const gen = m.metadata.generation;
      const v = validateResource(m);
      const raw = (v.ok ? v.spec : m.spec) as {
        parentRefs?: {
          group?: string;
          kind?: string;
          namespace?: string;
          name: string;
          sectionName?: string;
        }[];
      };
      const parents = (raw?.parentRefs ?? []).slice(0, 16).map((ref) => ({
        parentRef: {
          group: ref.group ?? GATEWAY_GROUP,
          kind: ref.kind ?? 'Gateway',
          namespace: ref.namespace ?? ns,
          name: ref.name,
          ...(ref.sectionName ? { sectionName: ref.sectionName } : {}),
        },
        controllerName: snapshot.controllerName,
        conditions: [
          v.ok
            ? bad(
                'Accepted',
                'Unsupported',
                'model routing needs LLM support in the data plane, which this gw build does not have yet',
                gen,
              )
            : bad('Accepted', 'Invalid', v.errors.map(formatError).join('; '), gen),
        ],
      }));
      statuses.push({ kind: 'GwModel', namespace: ns, name: m.metadata.name, status: { parents } });
    }
  }

  // Resources per Gateway.
  const out: Output = { gateways: {}, statuses };
  for (const g of gateways) {
    const resources: NamedResource[] = [];
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
    for (const bkey of [...new Set(rules.flatMap((r) => r.backends))].sort()) {
      const b = backends.get(bkey);
      if (!b?.target) continue;
      // inline GwBackend policies win over GwPolicy backend sections for the same field
      const merged = { ...(backendExtra.get(bkey) ?? {}), ...b.policies };
      resources.push({
        name: `backend/${bkey}`,
        resource: {
          backend: {
            name: bkey,
            ...b.target,
            ...(Object.keys(merged).length > 0 ? { policies: merged } : {}),
          },
        },
      });
    }
    for (const a of attachments.filter((x) => x.gateway === g.key)) resources.push(a.resource);
    const fe = frontends.get(g.key);
    if (fe && Object.keys(fe).length > 0)
      resources.push({ name: 'frontend', resource: { frontend: { policies: fe } } });
    resources.sort((a, b) => a.name.localeCompare(b.name));
    out.gateways[g.key] = resources;
    statuses.push({
      kind: 'Gateway',
      namespace: g.object.metadata.namespace ?? 'default',
      name: g.object.metadata.name,
      status: gatewayStatus(g),
    });
    for (const s of g.listenerSets) {
      statuses.push({
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
  }
  for (const b of backends.values()) {
    statuses.push({
      kind: 'GwBackend',
      namespace: b.object.metadata.namespace ?? 'default',
      name: b.object.metadata.name,
      status: { conditions: [b.accepted] },
    });
  }
  for (const s of routes.statuses) statuses.push(s);
  statuses.sort((a, b) =>
    `${a.kind}/${a.namespace ?? ''}/${a.name}`.localeCompare(`${b.kind}/${b.namespace ?? ''}/${b.name}`),
  );
  return out;
}
