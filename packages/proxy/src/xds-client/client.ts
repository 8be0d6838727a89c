// The proxy's xDS client: one delta ADS stream to the controller, subscribed to every resource of the
// proxy's Gateway. After each response the resources are built into a config (build.ts: assembled
// into the standalone config document and loaded like a file); a good config is handed on and ACKed,
// a bad one NACKed with its issues while the last good config keeps serving. A lost controller is
// retried with backoff. This module loads no config schema: build.ts is imported when first needed,
// or the caller builds elsewhere (`build`, e.g. in a process of its own).

import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { create } from '@bufbuild/protobuf';
import {
  Client,
  type ClientDuplexStream,
  credentials,
  Metadata,
  type ServiceError,
  type StatusObject,
  status,
} from '@grpc/grpc-js';
import {
  type DeltaDiscoveryRequest,
  DeltaDiscoveryRequestSchema,
  type DeltaDiscoveryResponse,
} from '@gw/xds-proto/envoy/service/discovery/v3/discovery';
import { StatusSchema } from '@gw/xds-proto/google/rpc/status';
import type { Logger } from 'pino';
import type { LoadedConfigResult } from '../config/loader.ts';
import { VERSION } from '../version.ts';
import { parseXdsAddress } from './address.ts';
import { AdsService, RESOURCE_TYPE_URL } from './ads-service.ts';
import type { HeldResources, XdsOrigin } from './held.ts';

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
  onConfig(config: LoadedConfigResult): void | Promise<void>;
  /** A config was refused (invalid, or `onConfig` threw); `message` lists the issues. */
  onReject?(message: string): void;
  log: Logger;
  /** Reconnect delay: starts at `initialMs`, doubles to `maxMs`, with jitter. Default 250 ms → 30 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** For file references in resources (there should be none): default the working directory. */
  baseDir?: string;
  /**
   * Builds the config of the resources held (default: build.ts in this thread); a throw NACKs the
   * update with the error's message.
   */
  build?(held: HeldResources, origin: XdsOrigin): Promise<LoadedConfigResult>;
}

export type XdsClientState = 'connecting' | 'connected' | 'backoff' | 'closed';

export interface XdsClient {
  readonly state: XdsClientState;
  /** Version of the last config `onConfig` accepted. */
  readonly version: string | undefined;
  /** Resource name → version, as the controller last sent them (including a NACKed update). */
  readonly resources: ReadonlyMap<string, string>;
  /**
   * Waiting to reconnect: connect now, without the rest of the wait (the token and CA files are read
   * again). Returns false, doing nothing, when connected, connecting or closed.
   */
  retryNow(): boolean;
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
  const held = new Map<string, { version: string } & ({ bytes: Uint8Array } | { error: string })>();
  const origin: XdsOrigin = {
    address: opts.address,
    gateway: opts.gateway,
    baseDir: opts.baseDir ?? process.cwd(),
  };
  const build =
    opts.build ??
    (async (h: HeldResources, o: XdsOrigin) => (await import('./build.ts')).buildXdsConfig(h, o));
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
      // Decoded where the config is built (build.ts).
      if (r.resource?.typeUrl === RESOURCE_TYPE_URL)
        held.set(r.name, { version: r.version, bytes: r.resource.value });
      else held.set(r.name, { version: r.version, error: `type ${r.resource?.typeUrl ?? 'none'}` });
    }
    let detail: string | undefined;
    try {
      const config = await build(held, origin);
      const ir = config.ir;
      if (ir.version !== version) {
        await opts.onConfig(config);
        log.info(
          { version: ir.version, resources: held.size, nonce: res.nonce },
          version === undefined ? 'xDS config applied' : 'xDS config updated',
        );
        version = ir.version;
      }
    } catch (err) {
      // A ConfigError's message lists every issue under its resource's name.
      detail = (err as Error).message ?? String(err);
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
    retryNow() {
      if (state !== 'backoff') return false;
      clearTimeout(timer);
      timer = undefined;
      void connect();
      return true;
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
