// The /config_dump document (its shape is @gw/api's ConfigDump): the running config as the proxy
// understands it, secrets redacted.
import type { ConfigDump } from '@gw/api';
import type { BindIR, RouteBackendIR } from '../config/ir.ts';
import type { StartupConfig } from '../config/load.ts';
import type { Supervisor } from '../server/supervisor.ts';
import { redactPolicies } from '../trace/redact.ts';
import type { HealthSnapshot } from '../upstream/health.ts';

/** `health`: each worker's endpoint health, in s.workers order (workerHealth). */
export function configDump(
  s: Supervisor,
  startup: StartupConfig,
  lastError: string | undefined,
  health: readonly (HealthSnapshot[] | undefined)[] = [],
): ConfigDump {
  const ir = s.ir;
  const ports = s.ports;
  const binds = (ir?.binds ?? []).map((b: BindIR) => ({
    key: b.key,
    address: b.address,
    port: ports[b.key] ?? b.port,
    protocol: b.protocol,
    listeners: b.listeners.map((l) => ({
      gateway: l.gateway,
      name: l.name,
      hostname: l.hostname,
      protocol: l.protocol,
      tls: l.tls,
      routes: l.routes.map((r) => r.key),
    })),
  }));
  const routes = (ir?.binds ?? []).flatMap((b) =>
    b.listeners.flatMap((l) =>
      l.routes.map((r) => ({
        key: r.key,
        name: r.name,
        definedAt: r.path,
        hostnames: r.hostnames,
        matches: r.matches,
        backends: r.backends.map((x) => ({ name: x.name, weight: x.weight })),
      })),
    ),
  );
  const backends = new Map<string, RouteBackendIR>();
  for (const b of ir?.binds ?? [])
    for (const l of b.listeners)
      for (const r of l.routes) for (const x of r.backends) backends.set(x.name, x);
  const sensitive = new Set(ir?.global.sensitiveHeaders ?? []);
  const policies = (ir?.binds ?? []).flatMap((b) =>
    b.listeners.flatMap((l) => [
      // what runs before a route is chosen, then each route's own
      ...(l.gatewayPhase
        ? [
            {
              target: { listener: `${l.gateway}/${l.name}` },
              phase: 'gateway' as const,
              policy: redactPolicies(l.gatewayPhase, sensitive),
            },
          ]
        : []),
      ...l.routes
        .filter((r) => Object.keys(r.policies).length > 0)
        .map((r) => ({ target: { route: r.key }, policy: redactPolicies(r.policies, sensitive) })),
    ]),
  );
  // JSON.stringify through toJSON: Secret values come out as "[redacted]". config-dump.test.ts holds
  // the result to the ConfigDump schema.
  return JSON.parse(
    JSON.stringify({
      version: ir?.version,
      source: ir?.source,
      lastReloadError: lastError,
      config: { ...startup, ...(ir ? { global: ir.global } : {}) },
      frontendPolicies: ir?.frontend,
      binds,
      routes,
      backends: [...backends.values()].map((b) => ({
        name: b.name,
        target: b.target,
        policies: redactPolicies(b.policies, sensitive),
      })),
      policies,
      workloads: [],
      services: [],
      workers: s.workers.map((w, i) => ({
        index: w.index,
        version: w.version,
        ...(health[i]?.length ? { endpointHealth: health[i] } : {}),
      })),
    }),
  );
}

/** Each worker's endpoint health; a worker that cannot answer (exiting) shows none. */
export function workerHealth(s: Supervisor): Promise<(HealthSnapshot[] | undefined)[]> {
  return Promise.all(
    s.workers.map(async (w) => {
      try {
        return await w.call<HealthSnapshot[]>({ type: 'health' });
      } catch {
        return undefined;
      }
    }),
  );
}
