// Writes the statuses the translator wants: each is merged with the object's current status (other
// controllers' entries kept, transition times kept while a condition holds), and patched only when it
// changed, up to `concurrency` patches in flight. One pass at a time: a pass asked for while another
// runs waits for it, so a later pass never races an earlier one on the same object.
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { StatusUpdate } from '../translator/types.ts';
import { mergeStatus, statusChanged } from './merge.ts';

/** Where statuses are read from (the informer cache) and written to (the API server). */
export interface StatusTarget {
  /** The object's current status as last seen; undefined when the object is gone or not ours to write. */
  current(kind: string, namespace: string | undefined, name: string): { status?: unknown } | undefined;
  patch(
    kind: string,
    namespace: string | undefined,
    name: string,
    status: Record<string, unknown>,
  ): Promise<void>;
}

export interface StatusWriterOptions {
  target: StatusTarget;
  controllerName: string;
  /** Patches in flight at most (default 8). */
  concurrency?: number;
  /** RFC 3339 time for new transitions (default: now, to the second). */
  now?: () => string;
  log?: (level: 'warn', msg: string, fields: Record<string, unknown>) => void;
}

export interface StatusWriterMetrics {
  writes: number;
  errors: number;
  /** Statuses that needed no write. */
  unchanged: number;
}

const secondsNow = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

export class StatusWriter {
  readonly metrics: StatusWriterMetrics = { writes: 0, errors: 0, unchanged: 0 };
  readonly #o: StatusWriterOptions;
  #pass: Promise<void> = Promise.resolve();

  constructor(o: StatusWriterOptions) {
    this.#o = o;
  }

  /** Writes what changed among `updates`; resolves when this pass is done (errors are counted and logged). */
  write(updates: readonly StatusUpdate[]): Promise<void> {
    const run = this.#pass.then(() => this.#run(updates));
    this.#pass = run;
    return run;
  }

  async #run(updates: readonly StatusUpdate[]): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < updates.length) {
        const u = updates[next++] as StatusUpdate;
        await this.#one(u);
      }
    };
    const n = Math.max(1, Math.min(this.#o.concurrency ?? 8, updates.length));
    await Promise.all(Array.from({ length: n }, worker));
  }

  async #one(s: StatusUpdate): Promise<void> {
    const { target, controllerName } = this.#o;
    const current = target.current(s.kind, s.namespace, s.name);
    if (!current) return;
    const next = mergeStatus(
      s.kind,
      current.status as Record<string, unknown> | undefined,
      s.status,
      controllerName,
      (this.#o.now ?? secondsNow)(),
    );
    if (!statusChanged(current.status, next)) {
      this.metrics.unchanged++;
      return;
    }
    try {
      await target.patch(s.kind, s.namespace, s.name, next);
      this.metrics.writes++;
    } catch (err) {
      this.metrics.errors++;
      this.#o.log?.('warn', 'status write failed', {
        kind: s.kind,
        namespace: s.namespace,
        name: s.name,
        err: String(err),
      });
    }
  }
}

const GROUPS: Record<string, { group: string; version: string; plural: string; cluster?: boolean }> = {
  GatewayClass: {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    plural: 'gatewayclasses',
    cluster: true,
  },
  Gateway: { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways' },
  ListenerSet: { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'listenersets' },
  HTTPRoute: { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes' },
  GRPCRoute: { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'grpcroutes' },
  TCPRoute: { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'tcproutes' },
  TLSRoute: { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'tlsroutes' },
  BackendTLSPolicy: { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'backendtlspolicies' },
  GwPolicy: { group: 'gw.dev', version: 'v1alpha1', plural: 'gwpolicies' },
  GwBackend: { group: 'gw.dev', version: 'v1alpha1', plural: 'gwbackends' },
  GwModel: { group: 'gw.dev', version: 'v1alpha1', plural: 'gwmodels' },
  InferencePool: { group: 'inference.networking.k8s.io', version: 'v1', plural: 'inferencepools' },
};

/** The API server behind `kc` as a StatusTarget, reading current statuses through `get`. */
export function kubeStatusTarget(
  kc: KubeConfig,
  get: (kind: string, namespace: string | undefined, name: string) => { status?: unknown } | undefined,
): StatusTarget {
  const custom = kc.makeApiClient(CustomObjectsApi);
  return {
    current: (kind, namespace, name) => (GROUPS[kind] ? get(kind, namespace, name) : undefined),
    async patch(kind, namespace, name, status) {
      const g = GROUPS[kind];
      if (!g) return;
      const opts = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
      // a merge patch replaces lists whole: the merged lists carry the other controllers' entries
      const body = { status };
      if (g.cluster) {
        await custom.patchClusterCustomObjectStatus(
          { group: g.group, version: g.version, plural: g.plural, name, body },
          opts,
        );
      } else {
        await custom.patchNamespacedCustomObjectStatus(
          {
            group: g.group,
            version: g.version,
            namespace: namespace ?? 'default',
            plural: g.plural,
            name,
            body,
          },
          opts,
        );
      }
    },
  };
}
