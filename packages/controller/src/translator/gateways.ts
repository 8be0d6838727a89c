// GatewayClasses, Gateways and ListenerSets → listeners (grouped into binds by port) and their status.
// Gateway API rules applied here: a class is ours when its controllerName is; listeners on one port
// must agree on protocol and differ by hostname (else Conflicted); HTTPS listeners need a readable
// certificate Secret (else ResolvedRefs False); a ListenerSet attaches only where its Gateway's
// allowedListeners lets it.
import { bad, ok } from './conditions.ts';
import type { Condition, KubeObject, Lookup } from './types.ts';

export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
/** How a Gateway's Programmed message starts when its configuration is ready to send (status/programmed.ts reads it). */
export const SENT_TO_PROXIES = 'sent to the proxies';
/** The route kinds each listener protocol takes. */
const ROUTE_KINDS: Record<string, readonly string[]> = {
  HTTP: ['HTTPRoute', 'GRPCRoute'],
  HTTPS: ['HTTPRoute', 'GRPCRoute'],
  TCP: ['TCPRoute'],
  TLS: ['TLSRoute'],
};

export interface AllowedRoutes {
  from: 'Same' | 'All' | 'Selector';
  selector?: { matchLabels?: Record<string, string>; matchExpressions?: LabelExpression[] };
  kinds: string[];
}
export interface LabelExpression {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[] | undefined;
}

export interface ListenerInfo {
  /** `<ns>/<gateway>` */
  gateway: string;
  /** Listener name as routes' sectionName and the GwPolicy sectionName see it. */
  name: string;
  /** Where it was declared. */
  owner: { kind: 'Gateway' | 'ListenerSet'; namespace: string; name: string };
  port: number;
  protocol: string;
  hostname?: string;
  tls?: { certPem: string; keyPem: string };
  /** A TLS listener's mode: Passthrough (the backend answers the handshake) or Terminate. */
  tlsMode?: 'Passthrough' | 'Terminate';
  allowedRoutes: AllowedRoutes;
  conditions: Condition[];
  /** Accepted, refs resolved and not conflicted: routes may attach and the proxy gets it. */
  ready: boolean;
  attachedRoutes: number;
}

export interface GatewayInfo {
  key: string;
  object: KubeObject;
  listeners: ListenerInfo[];
  listenerSets: { object: KubeObject; listeners: ListenerInfo[]; accepted: Condition }[];
}

export function matchesLabels(
  labels: Record<string, string> | undefined,
  selector:
    | {
        matchLabels?: Record<string, string> | undefined;
        matchExpressions?: readonly LabelExpression[] | undefined;
      }
    | undefined,
): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of selector?.matchExpressions ?? []) {
    const has = e.key in l;
    const inValues = has && (e.values ?? []).includes(l[e.key] as string);
    if (e.operator === 'In' && !inValues) return false;
    if (e.operator === 'NotIn' && inValues) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** The GatewayClasses whose controllerName is ours, with their status. */
export function ourClasses(objects: KubeObject[], controllerName: string): KubeObject[] {
  return objects.filter(
    (o) =>
      o.kind === 'GatewayClass' && (o.spec as { controllerName?: string })?.controllerName === controllerName,
  );
}

interface ListenerSpec {
  name: string;
  port: number;
  protocol: string;
  hostname?: string;
  tls?: {
    mode?: string;
    certificateRefs?: { group?: string; kind?: string; name: string; namespace?: string }[];
  };
  allowedRoutes?: {
    namespaces?: { from?: 'Same' | 'All' | 'Selector'; selector?: AllowedRoutes['selector'] };
    kinds?: { group?: string; kind: string }[];
  };
}

function decode(b64: string | undefined): string | undefined {
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8');
}

/** Builds one listener, checking what can be checked alone (protocol, TLS refs, route kinds). */
function listenerInfo(
  gateway: string,
  owner: ListenerInfo['owner'],
  spec: ListenerSpec,
  lookup: Lookup,
  grants: (fromKind: string, fromNs: string, toKind: string, toNs: string, toName: string) => boolean,
  generation: number | undefined,
): ListenerInfo {
  const conditions: Condition[] = [];
  const requestedKinds = spec.allowedRoutes?.kinds;
  const protocolKinds = ROUTE_KINDS[spec.protocol] ?? [];
  const kinds = requestedKinds
    ? requestedKinds
        .filter((k) => (k.group ?? GATEWAY_GROUP) === GATEWAY_GROUP && protocolKinds.includes(k.kind))
        .map((k) => k.kind)
    : [...protocolKinds];
  const info: ListenerInfo = {
    gateway,
    name: spec.name,
    owner,
    port: spec.port,
    protocol: spec.protocol,
    ...(spec.hostname ? { hostname: spec.hostname.toLowerCase() } : {}),
    allowedRoutes: {
      from: spec.allowedRoutes?.namespaces?.from ?? 'Same',
      ...(spec.allowedRoutes?.namespaces?.selector
        ? { selector: spec.allowedRoutes.namespaces.selector }
        : {}),
      kinds,
    },
    conditions,
    ready: false,
    attachedRoutes: 0,
  };
  if (!(spec.protocol in ROUTE_KINDS)) {
    conditions.push(
      bad(
        'Accepted',
        'UnsupportedProtocol',
        `protocol ${spec.protocol} is not supported (HTTP, HTTPS, TCP, TLS)`,
        generation,
      ),
    );
    return info;
  }
  // a TCP listener matches no name: its hostname is not used
  if (spec.protocol === 'TCP') delete info.hostname;
  let resolved: Condition = ok('ResolvedRefs', 'ResolvedRefs', 'all references resolved', generation);
  if (requestedKinds && kinds.length < requestedKinds.length) {
    const unsupported = requestedKinds.filter((k) => !kinds.includes(k.kind)).map((k) => k.kind);
    resolved = bad(
      'ResolvedRefs',
      'InvalidRouteKinds',
      `route kinds not supported: ${unsupported.join(', ')}`,
      generation,
    );
  }
  const mode = spec.tls?.mode ?? 'Terminate';
  if (spec.protocol === 'TLS') info.tlsMode = mode === 'Passthrough' ? 'Passthrough' : 'Terminate';
  if (spec.protocol === 'HTTPS' || (spec.protocol === 'TLS' && mode !== 'Passthrough')) {
    const ref = spec.tls?.certificateRefs?.[0];
    if (mode !== 'Terminate') {
      conditions.push(
        bad(
          'Accepted',
          'UnsupportedValue',
          `tls mode ${mode} is not supported on ${spec.protocol} listeners`,
          generation,
        ),
      );
      return info;
    }
    if (!ref) {
      resolved = bad(
        'ResolvedRefs',
        'InvalidCertificateRef',
        `${spec.protocol === 'HTTPS' ? 'an HTTPS' : 'a TLS'} listener that terminates TLS needs tls.certificateRefs`,
        generation,
      );
    } else {
      const ns = ref.namespace ?? owner.namespace;
      const secret = lookup.get('Secret', ns, ref.name);
      if ((ref.group ?? '') !== '' || (ref.kind ?? 'Secret') !== 'Secret') {
        resolved = bad(
          'ResolvedRefs',
          'InvalidCertificateRef',
          `certificateRefs must name a Secret`,
          generation,
        );
      } else if (ns !== owner.namespace && !grants(owner.kind, owner.namespace, 'Secret', ns, ref.name)) {
        resolved = bad(
          'ResolvedRefs',
          'RefNotPermitted',
          `no ReferenceGrant in namespace ${ns} allows this ${owner.kind} to use secret ${ref.name}`,
          generation,
        );
      } else if (!secret) {
        resolved = bad(
          'ResolvedRefs',
          'InvalidCertificateRef',
          `secret ${ns}/${ref.name} not found`,
          generation,
        );
      } else {
        const certPem = decode(secret.data?.['tls.crt']);
        const keyPem = decode(secret.data?.['tls.key']);
        if (!certPem?.includes('BEGIN CERTIFICATE') || !keyPem?.includes('PRIVATE KEY')) {
          resolved = bad(
            'ResolvedRefs',
            'InvalidCertificateRef',
            `secret ${ns}/${ref.name} has no PEM tls.crt and tls.key`,
            generation,
          );
        } else {
          info.tls = { certPem, keyPem };
        }
      }
    }
  }
  conditions.push(ok('Accepted', 'Accepted', 'listener accepted', generation), resolved);
  return info;
}

/** Marks listeners on a shared port that disagree on protocol or repeat a hostname. */
function markConflicts(
  listeners: ListenerInfo[],
  generationOf: (l: ListenerInfo) => number | undefined,
): void {
  const byPort = new Map<number, ListenerInfo[]>();
  for (const l of listeners) {
    if (!l.conditions.some((c) => c.type === 'Accepted' && c.status === 'True')) continue;
    byPort.set(l.port, [...(byPort.get(l.port) ?? []), l]);
  }
  for (const group of byPort.values()) {
    const protocols = new Set(group.map((l) => l.protocol));
    const tlsModes = new Set(group.flatMap((l) => (l.tlsMode ? [l.tlsMode] : [])));
    const seenHost = new Map<string, ListenerInfo>();
    for (const l of group) {
      let conflict: Condition | undefined;
      if (protocols.size > 1) {
        conflict = bad(
          'Conflicted',
          'ProtocolConflict',
          `port ${l.port} is used with protocols ${[...protocols].sort().join(' and ')}`,
          generationOf(l),
        );
      } else if (tlsModes.size > 1) {
        // the proxy reads a port's connections one way: the ClientHello passed on, or answered
        conflict = bad(
          'Conflicted',
          'ProtocolConflict',
          `port ${l.port} has TLS listeners that pass TLS through and listeners that terminate it`,
          generationOf(l),
        );
      } else {
        const host = l.hostname ?? '*any*';
        const first = seenHost.get(host);
        if (first) {
          conflict = bad(
            'Conflicted',
            'HostnameConflict',
            `listener ${first.name} already serves ${l.hostname ?? 'every hostname'} on port ${l.port}`,
            generationOf(l),
          );
        } else seenHost.set(host, l);
      }
      // Gateway API: Conflicted=True means conflicted; we emit status True with the reason
      if (conflict) l.conditions.push({ ...conflict, status: 'True' });
    }
  }
}

function finish(l: ListenerInfo, generation: number | undefined): void {
  const accepted = l.conditions.find((c) => c.type === 'Accepted');
  const resolved = l.conditions.find((c) => c.type === 'ResolvedRefs');
  const conflicted = l.conditions.find((c) => c.type === 'Conflicted');
  if (!conflicted) l.conditions.push(bad('Conflicted', 'NoConflicts', 'no conflicts', generation));
  l.ready = accepted?.status === 'True' && resolved?.status === 'True' && !conflicted;
  l.conditions.push(
    l.ready
      ? ok('Programmed', 'Programmed', 'sent to the proxies', generation)
      : bad('Programmed', 'Invalid', 'not sent to the proxies: see the other conditions', generation),
  );
}

export function collectGateways(
  objects: KubeObject[],
  classes: KubeObject[],
  lookup: Lookup,
  grants: (fromKind: string, fromNs: string, toKind: string, toNs: string, toName: string) => boolean,
): GatewayInfo[] {
  const classNames = new Set(classes.map((c) => c.metadata.name));
  const gateways = objects
    .filter(
      (o) =>
        o.kind === 'Gateway' &&
        classNames.has((o.spec as { gatewayClassName?: string })?.gatewayClassName ?? ''),
    )
    .sort((a, b) => key(a).localeCompare(key(b)));
  const sets = objects.filter((o) => o.kind === 'ListenerSet' || o.kind === 'XListenerSet');
  const out: GatewayInfo[] = [];
  for (const gw of gateways) {
    const ns = gw.metadata.namespace ?? 'default';
    const gkey = key(gw);
    const gen = gw.metadata.generation;
    const spec = gw.spec as {
      listeners?: ListenerSpec[];
      allowedListeners?: {
        namespaces?: { from?: 'Same' | 'All' | 'Selector' | 'None'; selector?: AllowedRoutes['selector'] };
      };
    };
    const own = (spec.listeners ?? []).map((l) =>
      listenerInfo(gkey, { kind: 'Gateway', namespace: ns, name: gw.metadata.name }, l, lookup, grants, gen),
    );
    const info: GatewayInfo = { key: gkey, object: gw, listeners: own, listenerSets: [] };
    const from = spec.allowedListeners?.namespaces?.from ?? 'None';
    for (const ls of sets.sort((a, b) => key(a).localeCompare(key(b)))) {
      const lsSpec = ls.spec as {
        parentRef?: { group?: string; kind?: string; name: string; namespace?: string };
        listeners?: ListenerSpec[];
      };
      const parent = lsSpec.parentRef;
      const lsNs = ls.metadata.namespace ?? 'default';
      if (
        !parent ||
        (parent.kind ?? 'Gateway') !== 'Gateway' ||
        (parent.namespace ?? lsNs) !== ns ||
        parent.name !== gw.metadata.name
      )
        continue;
      const lsGen = ls.metadata.generation;
      let allowed = false;
      if (from === 'All') allowed = true;
      else if (from === 'Same') allowed = lsNs === ns;
      else if (from === 'Selector') {
        allowed = matchesLabels(
          lookup.get('Namespace', '', lsNs)?.metadata.labels,
          spec.allowedListeners?.namespaces?.selector,
        );
      }
      if (!allowed) {
        info.listenerSets.push({
          object: ls,
          listeners: [],
          accepted: bad(
            'Accepted',
            'NotAllowed',
            `Gateway ${gkey} does not allow ListenerSets from namespace ${lsNs}`,
            lsGen,
          ),
        });
        continue;
      }
      const listeners = (lsSpec.listeners ?? []).map((l) =>
        listenerInfo(
          gkey,
          { kind: 'ListenerSet', namespace: lsNs, name: ls.metadata.name },
          l,
          lookup,
          grants,
          lsGen,
        ),
      );
      info.listenerSets.push({
        object: ls,
        listeners,
        accepted: ok('Accepted', 'Accepted', 'attached to its Gateway', lsGen),
      });
    }
    const all = [...own, ...info.listenerSets.flatMap((s) => s.listeners)];
    const genOf = (l: ListenerInfo) =>
      l.owner.kind === 'Gateway'
        ? gen
        : info.listenerSets.find((s) => s.object.metadata.name === l.owner.name)?.object.metadata.generation;
    // the Gateway's own listeners take precedence over ListenerSet listeners in conflicts: they come first
    markConflicts(all, genOf);
    for (const l of all) finish(l, genOf(l));
    out.push(info);
  }
  return out;
}

export function key(o: KubeObject): string {
  return `${o.metadata.namespace ?? 'default'}/${o.metadata.name}`;
}

export function listenerStatus(l: ListenerInfo): Record<string, unknown> {
  return {
    name: l.name,
    supportedKinds: l.allowedRoutes.kinds.map((kind) => ({ group: GATEWAY_GROUP, kind })),
    attachedRoutes: l.attachedRoutes,
    conditions: l.conditions,
  };
}

/** The Gateway's own status: Accepted, Programmed, and each listener's. */
export function gatewayStatus(g: GatewayInfo): Record<string, unknown> {
  const gen = g.object.metadata.generation;
  const own = g.listeners;
  const anyReady = own.some((l) => l.ready) || g.listenerSets.some((s) => s.listeners.some((l) => l.ready));
  const invalid = own.filter((l) => !l.ready).map((l) => l.name);
  return {
    conditions: [
      ok('Accepted', 'Accepted', 'accepted by gw.dev/gw', gen),
      anyReady
        ? ok(
            'Programmed',
            'Programmed',
            invalid.length === 0
              ? SENT_TO_PROXIES
              : `${SENT_TO_PROXIES} without listeners ${invalid.join(', ')}`,
            gen,
          )
        : bad('Programmed', 'Invalid', 'no valid listener', gen),
    ],
    listeners: own.map(listenerStatus),
  };
}
