// The controller's xDS server: Envoy's delta ADS over grpc-js, serving each proxy the
// gw.resource.v1.Resource set of its own Gateway and sending only what changed since the last response.
//
// A proxy names its Gateway in `node.metadata.gateway` ("<namespace>/<name>"; `node.id` of that form
// is accepted when the metadata is absent). Versions are content hashes of each resource's binary
// encoding, so every controller replica gives a resource the same version and a proxy that
// reconnects to another replica with `initial_resource_versions` is sent only what differs.
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import {
  type AddressInfo,
  connect,
  createServer as createNetServer,
  type Server as NetServer,
} from 'node:net';
import { create, fromJson, type JsonValue, toBinary } from '@bufbuild/protobuf';
import { AnySchema } from '@bufbuild/protobuf/wkt';
import {
  type Metadata,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { hostPort } from '@gw/api/runtime';
import {
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  DeltaDiscoveryResponseSchema,
  type Resource as EnvoyResource,
  ResourceSchema as EnvoyResourceSchema,
} from '@gw/xds-proto/envoy/service/discovery/v3/discovery';
import { ResourceSchema } from '@gw/xds-proto/gw/resource/v1/resource';
import type { NamedResource } from '../translator/types.ts';
import { AdsService, RESOURCE_TYPE_URL } from './ads-service.ts';

/**
 * `plaintext`: no TLS. `tls`: server TLS from `tls.certFile`/`tls.keyFile`. `either`: both on one
 * port (the first byte of each connection decides; the gRPC server then sees loopback peers).
 */
export type XdsMode = 'plaintext' | 'tls' | 'either';

export type AuthResult = { ok: true; gateway?: string } | { ok: false; reason: string };

/** Checks a proxy's bearer token; `gateway`, when returned, is the only Gateway the proxy may ask for. */
export type Authenticate = (token: string) => Promise<AuthResult>;

export interface XdsServerOptions {
  port: number;
  /** Address to bind; default all IPv4 interfaces. */
  host?: string;
  mode: XdsMode;
  /** The serving certificate chain and key: files, or PEM text (the controller's own CA issued it). */
  tls?: { certFile: string; keyFile: string } | { cert: string; key: string };
  /** Without it every stream is accepted. */
  authenticate?: Authenticate;
}

/** One connected proxy stream. */
export interface ProxyInfo {
  stream: number;
  gateway: string;
  /** `node.id` the proxy sent. */
  node: string;
  peer: string;
}

export interface AckEvent extends ProxyInfo {
  nonce: string;
}

export interface NackEvent extends ProxyInfo {
  nonce: string;
  /** The proxy's error_detail: the config issues it found, one per line. */
  message: string;
  code: number;
}

export interface ResponseEvent extends ProxyInfo {
  nonce: string;
  /** Names of the resources sent (added or changed). */
  resources: string[];
  removed: string[];
}

/**
 * Where one connected proxy stands with its Gateway's current configuration: `acked` when it
 * acknowledged the version served now, `nacked` when it rejected the last response (with its error),
 * `pending` while a response is unanswered or nothing was sent yet.
 */
export interface ProxyAckState {
  node: string;
  stream: number;
  state: 'acked' | 'nacked' | 'pending';
  /** The proxy's error_detail, for `nacked`. */
  message?: string;
}

export interface RejectEvent {
  peer: string;
  code: status;
  reason: string;
}

export interface XdsEvents {
  connect: [ProxyInfo];
  disconnect: [ProxyInfo & { reason: string }];
  ack: [AckEvent];
  nack: [NackEvent];
  response: [ResponseEvent];
  /** A stream ended before it was served: authentication failed, no or a foreign Gateway, bad request. */
  reject: [RejectEvent];
}

export interface XdsMetrics {
  /** Gateway → proxy streams connected now. */
  connected: Record<string, number>;
  responsesTotal: number;
  resourcesSentTotal: number;
  removalsSentTotal: number;
  acksTotal: number;
  nacksTotal: number;
  rejectsTotal: number;
}

interface Entry {
  version: string;
  wire: EnvoyResource;
}

interface GatewayState {
  entries: Map<string, Entry>;
  /** Hash over every entry's name and version: the response's system_version_info. */
  version: string;
}

export class XdsServer extends EventEmitter<XdsEvents> {
  readonly port: number;
  readonly #server: Server;
  readonly #gateways = new Map<string, GatewayState>();
  readonly #streams = new Set<AdsStream>();
  readonly #nonceBase = randomBytes(4).toString('hex');
  #nonceSeq = 0;
  #streamSeq = 0;
  readonly #counts: Omit<XdsMetrics, 'connected'> = {
    responsesTotal: 0,
    resourcesSentTotal: 0,
    removalsSentTotal: 0,
    acksTotal: 0,
    nacksTotal: 0,
    rejectsTotal: 0,
  };

  readonly #front: NetServer | undefined;

  constructor(server: Server, port: number, front?: NetServer) {
    super();
    this.#server = server;
    this.port = port;
    this.#front = front;
  }

  /**
   * Replaces a Gateway's resources. Each connected proxy of that Gateway is sent the added and
   * changed resources and the names of the removed ones; nothing is sent when nothing changed. Throws
   * when a resource is not a valid gw.resource.v1.Resource or a name repeats (a translator bug).
   */
  setResources(gateway: string, resources: NamedResource[]): void {
    const entries = new Map<string, Entry>();
    for (const r of resources) {
      if (entries.has(r.name)) throw new Error(`xDS: resource ${r.name} of ${gateway} appears twice`);
      let bytes: Uint8Array;
      try {
        bytes = toBinary(ResourceSchema, fromJson(ResourceSchema, r.resource as unknown as JsonValue));
      } catch (err) {
        throw new Error(`xDS: resource ${r.name} of ${gateway} does not encode: ${(err as Error).message}`);
      }
      const version = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
      const wire = create(EnvoyResourceSchema, {
        name: r.name,
        version,
        resource: create(AnySchema, { typeUrl: RESOURCE_TYPE_URL, value: bytes }),
      });
      entries.set(r.name, { version, wire });
    }
    const h = createHash('sha256');
    for (const name of [...entries.keys()].sort()) h.update(`${name}\0${entries.get(name)?.version}\n`);
    this.#gateways.set(gateway, { entries, version: h.digest('hex').slice(0, 16) });
    for (const s of this.#streams) if (s.gateway === gateway) s.push();
  }

  /** Forgets a deleted Gateway after telling its proxies to drop every resource. */
  deleteGateway(gateway: string): void {
    if (!this.#gateways.has(gateway)) return;
    this.setResources(gateway, []);
    this.#gateways.delete(gateway);
  }

  /** Every connected proxy of `gateway` and where it stands with the configuration served now. */
  proxyStates(gateway: string): ProxyAckState[] {
    return [...this.#streams]
      .filter((s) => s.gateway === gateway)
      .map((s) => s.ackState())
      .sort((a, b) => a.stream - b.stream);
  }

  /** The resources a Gateway is served now: name → version. */
  versions(gateway: string): Record<string, string> {
    const g = this.#gateways.get(gateway);
    return Object.fromEntries([...(g?.entries ?? [])].map(([n, e]) => [n, e.version]));
  }

  metrics(): XdsMetrics {
    const connected: Record<string, number> = {};
    for (const s of this.#streams) {
      if (s.gateway !== undefined) connected[s.gateway] = (connected[s.gateway] ?? 0) + 1;
    }
    return { connected, ...this.#counts };
  }

  /** Stops serving; connected proxies see their stream end and keep their last config. */
  async close(): Promise<void> {
    for (const s of [...this.#streams]) s.end('server closing');
    this.#server.forceShutdown();
    this.#front?.close();
  }

  // ---------- used by AdsStream ----------

  state(gateway: string): GatewayState | undefined {
    return this.#gateways.get(gateway);
  }

  nonce(): string {
    return `${this.#nonceBase}-${++this.#nonceSeq}`;
  }

  streamId(): number {
    return ++this.#streamSeq;
  }

  added(s: AdsStream): void {
    this.#streams.add(s);
  }

  removed(s: AdsStream): void {
    this.#streams.delete(s);
  }

  count(k: keyof Omit<XdsMetrics, 'connected'>, n = 1): void {
    this.#counts[k] += n;
  }
}

type Call = ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;

/** The server's side of one proxy's delta stream. */
class AdsStream {
  readonly id: number;
  readonly #srv: XdsServer;
  readonly #call: Call;
  readonly peer: string;
  /** Set by the first request; the Gateway the token allows, when the authenticator names one. */
  gateway: string | undefined;
  #allowed: string | undefined;
  #node = '';
  #wildcard = false;
  readonly #names = new Set<string>();
  /** What the proxy holds, as far as this server knows: name → version. */
  readonly #known = new Map<string, string>();
  #subscribed = false;
  /** Whether any response went out on this stream (the first one is sent even when empty). */
  #synced = false;
  #closed = false;
  #queue: Promise<void>;
  /** The last response sent and what became of it; the version is the Gateway's at that time. */
  #last:
    | { nonce: string; version: string; outcome: 'pending' | 'acked' | 'nacked'; message?: string }
    | undefined;

  constructor(srv: XdsServer, call: Call, authenticate: Authenticate | undefined) {
    this.#srv = srv;
    this.#call = call;
    this.id = srv.streamId();
    this.peer = call.getPeer();
    this.#queue = this.#authenticate(call.metadata, authenticate);
    call.on('data', (req: DeltaDiscoveryRequest) => {
      this.#queue = this.#queue.then(() => {
        if (!this.#closed) this.#handle(req);
      });
    });
    call.on('end', () => this.end('proxy closed the stream'));
    call.on('cancelled', () => this.#cleanup('proxy cancelled the stream'));
    call.on('error', (err: Error) => this.#cleanup(err.message));
    call.on('close', () => this.#cleanup('stream closed'));
  }

  /** Acknowledged means: the last response was ACKed and it carried the version served now. */
  ackState(): ProxyAckState {
    const base = { node: this.#node, stream: this.id };
    const current = this.gateway === undefined ? undefined : this.#srv.state(this.gateway)?.version;
    const last = this.#last;
    if (!last || last.outcome === 'pending') return { ...base, state: 'pending' };
    if (last.outcome === 'nacked') return { ...base, state: 'nacked', message: last.message ?? '' };
    return { ...base, state: last.version === current ? 'acked' : 'pending' };
  }

  get info(): ProxyInfo {
    return { stream: this.id, gateway: this.gateway ?? '', node: this.#node, peer: this.peer };
  }

  async #authenticate(md: Metadata, authenticate: Authenticate | undefined): Promise<void> {
    if (!authenticate) return;
    const header = md.get('authorization')[0];
    const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!m) return this.#reject(status.UNAUTHENTICATED, 'no bearer token in the authorization metadata');
    let result: AuthResult;
    try {
      result = await authenticate(m[1] as string);
    } catch (err) {
      // The authenticator could not decide (API server down): the proxy should retry, not give up.
      return this.#reject(status.UNAVAILABLE, `cannot check the token: ${(err as Error).message}`);
    }
    if (!result.ok) return this.#reject(status.UNAUTHENTICATED, result.reason);
    this.#allowed = result.gateway;
  }

  #reject(code: status, reason: string): void {
    this.#srv.count('rejectsTotal');
    this.#srv.emit('reject', { peer: this.peer, code, reason });
    this.#closed = true;
    this.#call.emit('error', { code, details: reason } as ServiceError);
  }

  #handle(req: DeltaDiscoveryRequest): void {
    if (this.gateway === undefined) {
      const meta = req.node?.metadata?.gateway;
      const id = req.node?.id ?? '';
      const gateway = typeof meta === 'string' ? meta : id;
      this.#node = id;
      if (!/^[^/\s]+\/[^/\s]+$/.test(gateway)) {
        this.#reject(
          status.INVALID_ARGUMENT,
          'the first request must name the Gateway in node.metadata.gateway ("<namespace>/<name>")',
        );
        return;
      }
      if (this.#allowed !== undefined && this.#allowed !== gateway) {
        this.#reject(status.PERMISSION_DENIED, `this token is for Gateway ${this.#allowed}, not ${gateway}`);
        return;
      }
      this.gateway = gateway;
      this.#srv.added(this);
      this.#srv.emit('connect', this.info);
    }
    // Other type URLs may share an ADS stream; gw serves only its own.
    if (req.typeUrl !== RESOURCE_TYPE_URL) return;

    if (req.responseNonce) {
      // only the answer to the newest response says where the proxy stands now
      if (this.#last?.nonce === req.responseNonce) {
        this.#last.outcome = req.errorDetail ? 'nacked' : 'acked';
        if (req.errorDetail) this.#last.message = req.errorDetail.message;
      }
      if (req.errorDetail) {
        this.#srv.count('nacksTotal');
        this.#srv.emit('nack', {
          ...this.info,
          nonce: req.responseNonce,
          message: req.errorDetail.message,
          code: req.errorDetail.code,
        });
      } else {
        this.#srv.count('acksTotal');
        this.#srv.emit('ack', { ...this.info, nonce: req.responseNonce });
      }
    }

    const first = !this.#subscribed;
    let changed = first;
    if (first) {
      this.#subscribed = true;
      for (const [name, version] of Object.entries(req.initialResourceVersions))
        this.#known.set(name, version);
      // A first request that names nothing is a wildcard subscription (the legacy form of "*").
      if (req.resourceNamesSubscribe.length === 0) this.#wildcard = true;
    }
    for (const n of req.resourceNamesSubscribe) {
      changed = true;
      if (n === '*') this.#wildcard = true;
      else this.#names.add(n);
    }
    for (const n of req.resourceNamesUnsubscribe) {
      changed = true;
      if (n === '*') this.#wildcard = false;
      else this.#names.delete(n);
      // Dropped by the proxy: a later subscribe must send it again.
      this.#known.delete(n);
    }
    // A NACK is not answered by sending the same resources again; only a new setResources is.
    if (changed) this.push();
  }

  /** Sends what the proxy lacks; the first response of a stream goes out even when it is empty. */
  push(): void {
    if (this.#closed || !this.#subscribed || this.gateway === undefined) return;
    // Until the controller has computed this Gateway, the proxy keeps what it has: an unknown
    // Gateway is not an empty one.
    const state = this.#srv.state(this.gateway);
    if (!state) return;
    const resources: EnvoyResource[] = [];
    for (const [name, e] of state.entries) {
      if (!this.#wildcard && !this.#names.has(name)) continue;
      if (this.#known.get(name) !== e.version) resources.push(e.wire);
    }
    const removed: string[] = [];
    for (const name of this.#known.keys()) {
      const wanted = this.#wildcard || this.#names.has(name);
      if (!state.entries.has(name) || !wanted) removed.push(name);
    }
    if (resources.length === 0 && removed.length === 0 && this.#synced) {
      // nothing to send: an acknowledged proxy already holds what this version serves it
      if (this.#last?.outcome === 'acked') this.#last.version = state.version;
      return;
    }
    const nonce = this.#srv.nonce();
    this.#last = { nonce, version: state.version, outcome: 'pending' };
    this.#call.write(
      create(DeltaDiscoveryResponseSchema, {
        systemVersionInfo: state.version,
        typeUrl: RESOURCE_TYPE_URL,
        resources,
        removedResources: removed,
        nonce,
      }),
    );
    for (const r of resources) this.#known.set(r.name, r.version);
    for (const n of removed) this.#known.delete(n);
    this.#synced = true;
    this.#srv.count('responsesTotal');
    this.#srv.count('resourcesSentTotal', resources.length);
    this.#srv.count('removalsSentTotal', removed.length);
    this.#srv.emit('response', {
      ...this.info,
      nonce,
      resources: resources.map((r) => r.name),
      removed,
    });
  }

  end(reason: string): void {
    if (!this.#closed) {
      this.#closed = true;
      this.#call.end();
    }
    this.#cleanup(reason);
  }

  #cleanup(reason: string): void {
    this.#closed = true;
    if (this.gateway === undefined) return;
    const info = this.info;
    this.gateway = undefined;
    this.#srv.removed(this);
    this.#srv.emit('disconnect', { ...info, reason });
  }
}

/** Starts the server; resolves once it listens (`port` is the bound port when 0 was asked for). */
export async function startXdsServer(opts: XdsServerOptions): Promise<XdsServer> {
  const server = new Server({
    // Ping idle proxies so a vanished one (node gone, no FIN) is noticed and its stream released.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
  });
  let xds: XdsServer | undefined;
  const pending: Call[] = [];
  server.addService(AdsService, {
    deltaAggregatedResources(call: Call) {
      if (xds) new AdsStream(xds, call, opts.authenticate);
      else pending.push(call);
    },
  });
  const host = opts.host ?? '0.0.0.0';
  const bind = (address: string, creds: ServerCredentials) =>
    new Promise<number>((resolve, reject) =>
      server.bindAsync(address, creds, (err, p) => (err ? reject(err) : resolve(p))),
    );
  let port: number;
  let front: NetServer | undefined;
  try {
    // credentials first: a configuration without them must not leave a port bound
    const creds = serverCredentials(opts);
    if (opts.mode === 'either') {
      // One port for both: the first byte of a connection tells TLS (a handshake record, 0x16) from
      // plaintext HTTP/2 (its preface starts with "PRI"); each goes to the server bound on loopback for it.
      const plain = await bind('127.0.0.1:0', ServerCredentials.createInsecure());
      const tls = await bind('127.0.0.1:0', creds);
      front = await sniffingFront(host, opts.port, plain, tls);
      port = (front.address() as AddressInfo).port;
    } else {
      port = await bind(hostPort(host, opts.port), creds);
    }
  } catch (err) {
    server.forceShutdown();
    throw err;
  }
  xds = new XdsServer(server, port, front);
  for (const call of pending.splice(0)) new AdsStream(xds, call, opts.authenticate);
  return xds;
}

function sniffingFront(host: string, port: number, plainPort: number, tlsPort: number): Promise<NetServer> {
  const front = createNetServer((socket) => {
    socket.once('data', (first: Buffer) => {
      socket.pause();
      const upstream = connect(first[0] === 0x16 ? tlsPort : plainPort, '127.0.0.1', () => {
        upstream.write(first);
        socket.pipe(upstream).pipe(socket);
        socket.resume();
      });
      const close = () => {
        socket.destroy();
        upstream.destroy();
      };
      upstream.on('error', close);
      socket.on('error', close);
      socket.on('close', () => upstream.destroy());
      upstream.on('close', () => socket.destroy());
    });
    socket.on('error', () => socket.destroy());
  });
  return new Promise((resolve, reject) => {
    front.once('error', reject);
    front.listen(port, host, () => resolve(front));
  });
}

function tlsCredentials(opts: XdsServerOptions): ServerCredentials {
  if (!opts.tls) throw new Error(`xDS mode ${opts.mode} needs tls.certFile and tls.keyFile`);
  const t = opts.tls;
  const cert = 'cert' in t ? Buffer.from(t.cert) : readFileSync(t.certFile);
  const key = 'key' in t ? Buffer.from(t.key) : readFileSync(t.keyFile);
  return ServerCredentials.createSsl(null, [{ cert_chain: cert, private_key: key }], false);
}

function serverCredentials(opts: XdsServerOptions): ServerCredentials {
  return opts.mode === 'plaintext' ? ServerCredentials.createInsecure() : tlsCredentials(opts);
}
