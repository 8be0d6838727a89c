// The proxy's xDS client: one delta ADS stream to the controller, subscribed to every resource of the
// proxy's Gateway. After each response the resources are assembled into the standalone config
// document and loaded like a file; a good config is handed on and ACKed, a bad one NACKed with its
// issues while the last good config keeps serving. A lost controller is retried with backoff.

import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { create, fromBinary } from '@bufbuild/protobuf';
import {
  Client,
  type ClientDuplexStream,
  credentials,
  Metadata,
  type ServiceError,
  type StatusObject,
  status,
} from '@grpc/grpc-js';
import { ConfigError, type ConfigIssue, formatPath } from '@gw/api';
import {
  type DeltaDiscoveryRequest,
  DeltaDiscoveryRequestSchema,
  type DeltaDiscoveryResponse,
} from '@gw/xds-proto/envoy/service/discovery/v3/discovery';
import { StatusSchema } from '@gw/xds-proto/google/rpc/status';
import { type Resource, ResourceSchema } from '@gw/xds-proto/gw/resource/v1/resource';
import type { Logger } from 'pino';
import type { ProxyIR } from '../config/ir.ts';
import { loadConfigObject } from '../config/load.ts';
import { VERSION } from '../version.ts';
import { parseXdsAddress } from './address.ts';
import { AdsService, RESOURCE_TYPE_URL } from './ads-service.ts';
import { assembleConfig } from './assemble.ts';

export interface XdsClientOptions {
  /** `http://host:port` (plaintext) or `https://host:port` (TLS). */
  address: string;
  /** `<namespace>/<name>` of the Gateway this proxy serves. */
  gateway: string;
  /** Read on every (re)connect, since projected service account tokens rotate. */
  tokenFile?: string;
  /** CA bundle for `https://` (default: the system roots). */
  caFile?: string;
  /** `node.id`; default `<hostname>.<pid>`. */
  nodeId?: string;
  /** Applies a config; a throw NACKs it (the caller keeps serving what it had). */
  onConfig(ir: ProxyIR): void | Promise<void>;
  /** A config was refused (invalid, or `onConfig` threw); `message` lists the issues. */
  onReject?(message: string): void;
  log: Logger;
  /** Reconnect delay: starts at `initialMs`, doubles to `maxMs`, with jitter. Default 250 ms → 30 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** For file references in resources (there should be none): default the working directory. */
  baseDir?: string;
}

export type XdsClientState = 'connecting' | 'connected' | 'backoff' | 'closed';

export interface XdsClient {
  readonly state: XdsClientState;
  /** Version of the last config `onConfig` accepted. */
  readonly version: string | undefined;
  /** Resource name → version, as the controller last sent them (including a NACKed update). */
  readonly resources: ReadonlyMap<string, string>;
  close(): void;
}

type Stream = ClientDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;

const INVALID_ARGUMENT = 3;

export function startXdsClient(opts: XdsClientOptions): XdsClient {
  const url = parseXdsAddress(opts.address);
  const log = opts.log;
  const backoff = opts.backoff ?? { initialMs: 250, maxMs: 30_000 };
  const nodeId = opts.nodeId ?? `${hostname()}.${process.pid}`;
  // The controller's view: every resource it sent, also those of a refused update, so the next
  // delta applies on top of what the controller thinks this proxy has.
  const held = new Map<string, { version: string; resource: Resource | undefined; error?: string }>();
  let version: string | undefined;
  let state: XdsClientState = 'connecting';
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;
  let current: { client: Client; stream: Stream; ended: boolean } | undefined;

  const isClosed = () => state === 'closed';
  const setState = (next: XdsClientState, fields: Record<string, unknown>, msg: string) => {
    state = next;
    log.info({ xds: opts.address, gateway: opts.gateway, ...fields }, msg);
  };

  async function connect(): Promise<void> {
    if (state === 'closed') return;
    setState('connecting', { attempt }, 'xDS connecting');
    const md = new Metadata();
    if (opts.tokenFile) {
      try {
        const token = (await readFile(opts.tokenFile, 'utf8')).trim();
        md.set('authorization', `Bearer ${token}`);
      } catch (err) {
        retry(`cannot read the token file ${opts.tokenFile}: ${(err as Error).message}`);
        return;
      }
    }
    let creds = credentials.createInsecure();
    if (url.tls) {
      try {
        creds = credentials.createSsl(opts.caFile ? await readFile(opts.caFile) : null);
      } catch (err) {
        retry(`cannot read the CA file ${opts.caFile}: ${(err as Error).message}`);
        return;
      }
    }
    // close() may have run while the files were read.
    if (isClosed()) return;
    // A new channel per attempt: our backoff decides when to retry, not the channel's own.
    const client = new Client(url.target, creds, {
      // Notice a controller that vanished without closing the connection.
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
      // A Gateway's first response carries all of it (certificates included): no 4 MiB cap.
      'grpc.max_receive_message_length': -1,
    });
    const def = AdsService.deltaAggregatedResources;
    const stream: Stream = client.makeBidiStreamRequest(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
      md,
      {},
    );
    const conn = { client, stream, ended: false };
    current = conn;
    let queue: Promise<void> = Promise.resolve();
    let first = true;
    stream.on('data', (res: DeltaDiscoveryResponse) => {
      if (first) {
        first = false;
        attempt = 0;
        setState('connected', { node: nodeId }, 'xDS connected');
      }
      queue = queue.then(() => onResponse(conn, res));
    });
    const ended = (why: string) => {
      if (conn.ended) return;
      conn.ended = true;
      client.close();
      if (current === conn) current = undefined;
      retry(why);
    };
    stream.on('error', (err: ServiceError) => ended(`${status[err.code] ?? err.code}: ${err.details}`));
    stream.on('status', (s: StatusObject) => ended(`stream ended: ${status[s.code] ?? s.code} ${s.details}`));
    stream.on('end', () => ended('stream ended'));
    const initialResourceVersions: Record<string, string> = {};
    for (const [name, h] of held) initialResourceVersions[name] = h.version;
    stream.write(
      create(DeltaDiscoveryRequestSchema, {
        node: {
          id: nodeId,
          cluster: opts.gateway,
          metadata: { gateway: opts.gateway },
          userAgentName: 'gw',
          userAgentVersionType: { case: 'userAgentVersion', value: VERSION },
        },
        typeUrl: RESOURCE_TYPE_URL,
        resourceNamesSubscribe: ['*'],
        initialResourceVersions,
      }),
    );
  }

  function retry(why: string): void {
    if (state === 'closed') return;
    const base = Math.min(backoff.maxMs, backoff.initialMs * 2 ** attempt);
    // Half fixed, half random: replicas that lost the same controller do not come back in step.
    const delay = Math.round(base / 2 + (Math.random() * base) / 2);
    attempt++;
    setState('backoff', { reason: why, retryInMs: delay, keeping: version ?? 'nothing' }, 'xDS disconnected');
    clearTimeout(timer);
    timer = setTimeout(() => void connect(), delay);
  }

  async function onResponse(conn: NonNullable<typeof current>, res: DeltaDiscoveryResponse): Promise<void> {
    if (res.typeUrl !== RESOURCE_TYPE_URL) return;
    for (const name of res.removedResources) held.delete(name);
    for (const r of res.resources) {
      try {
        if (r.resource?.typeUrl !== RESOURCE_TYPE_URL)
          throw new Error(`type ${r.resource?.typeUrl ?? 'none'}`);
        held.set(r.name, { version: r.version, resource: fromBinary(ResourceSchema, r.resource.value) });
      } catch (err) {
        held.set(r.name, { version: r.version, resource: undefined, error: (err as Error).message });
      }
    }
    let detail: string | undefined;
    try {
      const ir = build();
      if (ir.version !== version) {
        await opts.onConfig(ir);
        log.info(
          { version: ir.version, resources: held.size, nonce: res.nonce },
          version === undefined ? 'xDS config applied' : 'xDS config updated',
        );
        version = ir.version;
      }
    } catch (err) {
      detail = err instanceof ConfigError ? err.message : ((err as Error).message ?? String(err));
      log.error(
        { nonce: res.nonce, keeping: version ?? 'nothing' },
        `xDS config rejected, keeping version ${version ?? '(none)'}:\n${detail}`,
      );
      opts.onReject?.(detail);
    }
    if (conn.ended) return;
    conn.stream.write(
      create(DeltaDiscoveryRequestSchema, {
        typeUrl: RESOURCE_TYPE_URL,
        responseNonce: res.nonce,
        ...(detail !== undefined
          ? { errorDetail: create(StatusSchema, { code: INVALID_ARGUMENT, message: clip(detail) }) }
          : {}),
      }),
    );
  }

  /** The held resources through the standalone loader; throws ConfigError listing every issue. */
  function build(): ProxyIR {
    const resources = new Map<string, Resource>();
    const issues: ConfigIssue[] = [];
    for (const [name, h] of held) {
      if (h.resource) resources.set(name, h.resource);
      else issues.push(issue(name, [], `cannot decode: ${h.error}`));
    }
    const a = assembleConfig(resources);
    for (const p of a.problems) issues.push(issue(p.resource, p.path, p.message));
    try {
      const loaded = loadConfigObject(
        `xds ${opts.address} gateway ${opts.gateway}`,
        a.data,
        opts.baseDir ?? process.cwd(),
        a.origin,
        { allowNoListeners: true },
      );
      if (issues.length === 0) return loaded.ir;
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      issues.push(...err.issues);
    }
    throw new ConfigError(issues);
  }

  void connect();
  return {
    get state() {
      return state;
    },
    get version() {
      return version;
    },
    get resources() {
      return new Map([...held].map(([n, h]) => [n, h.version]));
    },
    close() {
      if (state === 'closed') return;
      setState('closed', {}, 'xDS client closed');
      clearTimeout(timer);
      if (current) {
        current.ended = true;
        current.stream.cancel();
        current.client.close();
        current = undefined;
      }
    },
  };
}

/** The controller turns a NACK into an Event and a log line: the first issues say enough. */
const MAX_DETAIL = 16 * 1024;
function clip(detail: string): string {
  if (detail.length <= MAX_DETAIL) return detail;
  const cut = detail.lastIndexOf('\n', MAX_DETAIL);
  const kept = detail.slice(0, cut > 0 ? cut : MAX_DETAIL);
  const more = detail.slice(kept.length).split('\n').filter(Boolean).length;
  return `${kept}\n… and ${more} more`;
}

function issue(
  file: string,
  path: (string | number)[] | readonly (string | number)[],
  message: string,
): ConfigIssue {
  return { file, line: 0, column: 0, path: formatPath(path), message };
}
