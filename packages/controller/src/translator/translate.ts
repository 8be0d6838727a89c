// The translator: a snapshot of watched objects → per-Gateway xDS resources and the status of every
// object we own. Pure (no clock, network or env), so golden tests pin it down case by case.
// The steps, each in its own module: GatewayClasses and Gateways (gateways.ts), GwBackends
// (backends.ts), GwPolicies checked and mapped (attachment.ts, policy/), routes (routes.ts), policy
// attachment (attachment.ts), GwModels (models.ts), and the resources per Gateway (resources.ts).
import { GlobalConfig } from '@gw/api';
import { attachPolicies, checkPolicies, failClosedBackends } from './attachment.ts';
import { collectBackends } from './backends.ts';
import { ok } from './conditions.ts';
import type { GatewayInfo } from './gateways.ts';
import { collectGateways, ourClasses } from './gateways.ts';
import { referenceGrants } from './grants.ts';
import { collectInferencePools, inferencePoolStatuses } from './inference-pools.ts';
import { inMemoryLookup } from './lookup.ts';
import { translateModels } from './models.ts';
import { parametersOf, rawGlobalConfig, typedNotBuilt } from './parameters.ts';
import { gatewayResources, gatewayStatuses } from './resources.ts';
import { type RouteContext, routeUsesService, translateRoutes, translateTcpRoutes } from './routes.ts';
import type { Condition, Lookup, NamedResource, Output, Snapshot, StatusUpdate } from './types.ts';

export interface TranslateOptions {
  clusterDomain?: string;
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
  const clusterDomain = options.clusterDomain ?? 'cluster.local';
  // services: what GwPolicies on a Service give the route backends and MCP targets on it
  const { policies, services, backendTls } = checkPolicies(objects, lookup);
  const backends = collectBackends(objects, lookup, clusterDomain, services);
  failClosedBackends(policies, backends);
  const pools = snapshot.inferenceEnabled
    ? collectInferencePools(objects, lookup, {
        clusterDomain,
        services,
        staticBackend: (ns, name) => {
          const b = backends.get(`${ns}/${name}`);
          if (!b) return `GwBackend ${ns}/${name} not found`;
          if (!b.usable) return `GwBackend ${ns}/${name} is not usable: ${b.accepted.message}`;
          const host = (b.target as { host?: { host: string; port: number } } | undefined)?.host;
          if (!host || host.host.startsWith('unix:'))
            return `GwBackend ${ns}/${name} is not a static host:port backend`;
          const tls = b.policies['backendTLS'] as Record<string, unknown> | undefined;
          return { ...host, ...(tls ? { backendTLS: tls } : {}) };
        },
      })
    : undefined;
  const routeContext: RouteContext = {
    lookup,
    grants,
    controllerName: snapshot.controllerName,
    clusterDomain,
    ...(snapshot.modelsEnabled ? { modelsEnabled: true } : {}),
    ...(pools ? { inferencePools: pools } : {}),
    servicePolicies: services,
    backendProblem: (ns, name) => {
      const b = backends.get(`${ns}/${name}`);
      if (!b) return `GwBackend ${ns}/${name} not found`;
      return b.usable ? undefined : `GwBackend ${ns}/${name} is not usable: ${b.accepted.message}`;
    },
    backendKind: (ns, name) => {
      const t = backends.get(`${ns}/${name}`)?.target;
      return t ? Object.keys(t)[0] : undefined;
    },
  };
  const routes = translateRoutes(objects, gateways, routeContext);
  translateTcpRoutes(objects, gateways, routeContext, routes);
  const attachments = attachPolicies(policies, {
    objects,
    gateways,
    routes,
    backends,
    controllerName: snapshot.controllerName,
  });
  statuses.push(...attachments.statuses);
  const models = snapshot.modelsEnabled
    ? translateModels(objects, gateways, routes, { lookup, controllerName: snapshot.controllerName })
    : undefined;
  if (models) statuses.push(...models.statuses);

  const out: Output = { gateways: {}, statuses };
  for (const g of gateways) {
    const global = globalSettings(g, lookup);
    out.gateways[g.key] = gatewayResources(
      g,
      routes,
      backends,
      attachments,
      [...(models?.resources.get(g.key) ?? []), ...global.resources],
      pools,
    );
    const [own, ...sets] = gatewayStatuses(g) as [StatusUpdate, ...StatusUpdate[]];
    const addresses = proxyAddresses(g, lookup);
    const status: Record<string, unknown> = { ...own.status, ...(addresses ? { addresses } : {}) };
    if (global.note) status.conditions = withNote(status.conditions as Condition[], global.note);
    statuses.push({ ...own, status }, ...sets);
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
  // a BackendTLSPolicy's ancestors: the Gateways with routes that send to its Service
  const sendsTo = (gateway: string, ns: string, name: string) =>
    [...routes.rules, ...routes.tcpRules].some(
      (r) => r.gateway === gateway && routeUsesService(r.route, ns, name),
    );
  statuses.push(
    ...backendTls.statuses(
      (ns, name) => gateways.map((g) => g.key).filter((g) => sendsTo(g, ns, name)),
      snapshot.controllerName,
    ),
  );
  if (pools) statuses.push(...inferencePoolStatuses(pools, routes.poolParents, snapshot.controllerName));
  statuses.sort((a, b) =>
    `${a.kind}/${a.namespace ?? ''}/${a.name}`.localeCompare(`${b.kind}/${b.namespace ?? ''}/${b.name}`),
  );
  return out;
}

/**
 * The Gateway's addresses, from the Service the deployer made for it (the labels say so): its load
 * balancer's ingress when it has one, else its cluster IP. Undefined when there is no such Service.
 */
function proxyAddresses(g: GatewayInfo, lookup: Lookup): { type: string; value: string }[] | undefined {
  const svc = lookup.get('Service', g.object.metadata.namespace ?? 'default', g.object.metadata.name);
  if (svc?.metadata.labels?.['app.kubernetes.io/managed-by'] !== 'gw-controller') return undefined;
  const ingress =
    (svc.status as { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } } | undefined)
      ?.loadBalancer?.ingress ?? [];
  const out = ingress.flatMap((i) =>
    i.ip ? [{ type: 'IPAddress', value: i.ip }] : i.hostname ? [{ type: 'Hostname', value: i.hostname }] : [],
  );
  if (out.length > 0) return out;
  const ip = (svc.spec as { clusterIP?: string } | undefined)?.clusterIP;
  return ip && ip !== 'None' ? [{ type: 'IPAddress', value: ip }] : undefined;
}

/**
 * The `global` resource from the Gateway's GwParameters `rawConfig.config`, checked with the standalone
 * schema (a section the proxy would refuse is not sent), and a note on what was not applied.
 */
function globalSettings(g: GatewayInfo, lookup: Lookup): { resources: NamedResource[]; note?: string } {
  const className = (g.object.spec as { gatewayClassName?: string } | undefined)?.gatewayClassName ?? '';
  const params = parametersOf(lookup.get('GatewayClass', '', className), g.object, (ns, name) =>
    lookup.get('GwParameters', ns, name),
  );
  const raw = rawGlobalConfig(params);
  const notes = raw.notApplied.length > 0 ? [`GwParameters ${raw.notApplied.join(', ')} not applied`] : [];
  notes.push(...typedNotBuilt(params));
  let resources: NamedResource[] = [];
  if (raw.config) {
    const checked = GlobalConfig.safeParse(raw.config);
    if (checked.success) resources = [{ name: 'global', resource: { global: { config: raw.config } } }];
    else {
      const first = checked.error.issues[0];
      notes.push(
        `GwParameters rawConfig.config not applied: ${first ? `${['rawConfig', 'config', ...first.path].join('.')}: ${first.message}` : 'invalid'}`,
      );
    }
  }
  return { resources, ...(notes.length > 0 ? { note: notes.join('; ') } : {}) };
}

/** The Accepted condition with a note appended to its message. */
function withNote(conditions: Condition[], note: string): Condition[] {
  return conditions.map((c) => (c.type === 'Accepted' ? { ...c, message: `${c.message}; ${note}` } : c));
}
