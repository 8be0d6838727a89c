// Watches the kinds the translator reads with @kubernetes/client-node informers and keeps the latest
// copy of every object. An informer that fails (network, a CRD not installed yet) is restarted with
// backoff from the resourceVersion it had; when the API server answers that version with 410 Gone (its
// watch cache no longer reaches back that far: compaction, a restarted API server) the informer lists
// again, so no change is lost, and the provider says so ('expired'). Every change is announced; the
// controller debounces and translates the whole snapshot.
import { EventEmitter } from 'node:events';
import {
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  KubernetesObjectApi,
  ListWatch,
  Watch,
} from '@kubernetes/client-node';
import type { KubeObject } from '../translator/types.ts';

export interface WatchedKind {
  apiVersion: string;
  kind: string;
  /** Collection path, e.g. /apis/gateway.networking.k8s.io/v1/gateways */
  path: string;
  /** Only the objects with these labels, e.g. the proxy Deployments the deployer made. */
  labelSelector?: string;
  /**
   * Only the objects whose fields match, e.g. running Pods; one that stops matching is deleted from
   * the cache (the API server says so in the watch).
   */
  fieldSelector?: string;
  /**
   * A kind whose CRD a cluster may not have (a Gateway API release or channel without it): while the
   * API server does not serve it, it counts as listed with no objects, and it is asked for again
   * every ABSENT_RECHECK_MS, so a CRD installed later is picked up without a restart.
   */
  optional?: true;
}

/** How often a kind the API server does not serve (an optional kind's CRD not installed) is asked for. */
export const ABSENT_RECHECK_MS = 10_000;

const GA = 'gateway.networking.k8s.io';
export const WATCHED: readonly WatchedKind[] = [
  { apiVersion: `${GA}/v1`, kind: 'GatewayClass', path: `/apis/${GA}/v1/gatewayclasses` },
  { apiVersion: `${GA}/v1`, kind: 'Gateway', path: `/apis/${GA}/v1/gateways` },
  { apiVersion: `${GA}/v1`, kind: 'ListenerSet', path: `/apis/${GA}/v1/listenersets`, optional: true },
  { apiVersion: `${GA}/v1`, kind: 'HTTPRoute', path: `/apis/${GA}/v1/httproutes` },
  { apiVersion: `${GA}/v1`, kind: 'GRPCRoute', path: `/apis/${GA}/v1/grpcroutes`, optional: true },
  { apiVersion: `${GA}/v1`, kind: 'TCPRoute', path: `/apis/${GA}/v1/tcproutes`, optional: true },
  { apiVersion: `${GA}/v1`, kind: 'TLSRoute', path: `/apis/${GA}/v1/tlsroutes`, optional: true },
  {
    apiVersion: `${GA}/v1`,
    kind: 'BackendTLSPolicy',
    path: `/apis/${GA}/v1/backendtlspolicies`,
    optional: true,
  },
  { apiVersion: `${GA}/v1beta1`, kind: 'ReferenceGrant', path: `/apis/${GA}/v1beta1/referencegrants` },
  { apiVersion: 'gw.dev/v1alpha1', kind: 'GwPolicy', path: '/apis/gw.dev/v1alpha1/gwpolicies' },
  { apiVersion: 'gw.dev/v1alpha1', kind: 'GwBackend', path: '/apis/gw.dev/v1alpha1/gwbackends' },
  { apiVersion: 'gw.dev/v1alpha1', kind: 'GwParameters', path: '/apis/gw.dev/v1alpha1/gwparameters' },
  { apiVersion: 'v1', kind: 'Service', path: '/api/v1/services' },
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    path: '/apis/discovery.k8s.io/v1/endpointslices',
  },
  { apiVersion: 'v1', kind: 'Secret', path: '/api/v1/secrets' },
  { apiVersion: 'v1', kind: 'ConfigMap', path: '/api/v1/configmaps' },
  { apiVersion: 'v1', kind: 'Namespace', path: '/api/v1/namespaces' },
];
/** The proxy Deployments the deployer made (watched when it runs: their availability is Programmed's). */
export const DEPLOYMENT_KIND: WatchedKind = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  path: '/apis/apps/v1/deployments',
  labelSelector: 'app.kubernetes.io/managed-by=gw-controller',
};
/** The proxy DaemonSets the deployer made (GwParameters workload DaemonSet). */
export const DAEMONSET_KIND: WatchedKind = {
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  path: '/apis/apps/v1/daemonsets',
  labelSelector: 'app.kubernetes.io/managed-by=gw-controller',
};
/**
 * With --enable-inference-extension: InferencePools (optional: a cluster may not have the Inference
 * Extension's CRDs) and the Pods their selectors pick (their addresses and readiness): running ones
 * only, as the others are never endpoints, so the cache holds what could serve.
 */
export const INFERENCE_KINDS: readonly WatchedKind[] = [
  {
    apiVersion: 'inference.networking.k8s.io/v1',
    kind: 'InferencePool',
    path: '/apis/inference.networking.k8s.io/v1/inferencepools',
    optional: true,
  },
  { apiVersion: 'v1', kind: 'Pod', path: '/api/v1/pods', fieldSelector: 'status.phase=Running' },
];
export const MODEL_KIND: WatchedKind = {
  apiVersion: 'gw.dev/v1alpha1',
  kind: 'GwModel',
  path: '/apis/gw.dev/v1alpha1/gwmodels',
};

/** One line from a client-node error: the HTTP code and the Status message, not the whole response dump. */
export function shortError(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const code = /HTTP-Code: (\d+)/.exec(text)?.[1];
  const message = /\\"message\\":\\"((?:[^"\\]|\\[^"])*)\\"/.exec(text)?.[1];
  if (code) return `HTTP ${code}${message ? `: ${message}` : ''}`;
  return text.split('\n')[0] ?? text;
}

export interface ProviderEvents {
  change: [];
  synced: [];
  error: [kind: string, message: string];
  /** A watch was refused with 410 Gone; the informer lists the kind again. */
  expired: [kind: string, message: string];
  /** An optional kind the API server does not serve (its CRD is not installed): none of it is read. */
  absent: [kind: string, message: string];
  /** An optional kind that was absent is served now (its CRD was installed). */
  present: [kind: string];
}

/** Whether a list failed because the API server does not serve the kind (no CRD for it). */
function notServed(err: unknown): boolean {
  const e = err as { code?: number; statusCode?: number } | null;
  if (e?.code === 404 || e?.statusCode === 404) return true;
  const text = err instanceof Error ? err.message : String(err);
  return /Unrecognized API version and kind|HTTP-Code: 404/.test(text);
}

/**
 * client-node's Watch, telling `onGone` when the API server refuses the resourceVersion asked for:
 * as an ERROR event of code 410 on an open watch (the watch cache's answer) or as a 410 response.
 * ListWatch handles both by listing again; this only makes it visible.
 */
class GoneAwareWatch extends Watch {
  readonly #onGone: (message: string) => void;
  constructor(kc: KubeConfig, onGone: (message: string) => void) {
    super(kc);
    this.#onGone = onGone;
  }
  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    return super.watch(
      path,
      queryParams,
      (phase, obj, watchObj) => {
        const status = obj as { code?: number; message?: string } | undefined;
        if (phase === 'ERROR' && status?.code === 410) this.#onGone(status.message ?? 'Gone');
        callback(phase, obj, watchObj);
      },
      (err) => {
        const e = err as { statusCode?: number; message?: string } | null;
        if (e?.statusCode === 410) this.#onGone(e.message ?? 'Gone');
        done(err);
      },
    );
  }
}

interface KindWatch {
  kind: WatchedKind;
  informer: ListWatch<KubernetesObject>;
  synced: boolean;
  failures: number;
  /** An optional kind the API server does not serve, last time it was asked. */
  absent: boolean;
  timer?: NodeJS.Timeout;
}

export class KubeProvider extends EventEmitter<ProviderEvents> {
  readonly #kc: KubeConfig;
  readonly #api: KubernetesObjectApi;
  readonly #watches: KindWatch[] = [];
  #stopped = false;

  readonly #absentRecheckMs: number;

  constructor(
    kc: KubeConfig,
    kinds: readonly WatchedKind[] = WATCHED,
    opts: { absentRecheckMs?: number } = {},
  ) {
    super();
    this.#absentRecheckMs = opts.absentRecheckMs ?? ABSENT_RECHECK_MS;
    this.#kc = kc;
    this.#api = KubernetesObjectApi.makeApiClient(kc);
    for (const kind of kinds) this.#watches.push(this.#watch(kind));
  }

  #watch(kind: WatchedKind): KindWatch {
    const list = async (): Promise<KubernetesListObject<KubernetesObject>> => {
      const l = await this.#api.list<KubernetesObject>(
        kind.apiVersion,
        kind.kind,
        undefined,
        undefined,
        undefined,
        undefined,
        kind.fieldSelector,
        kind.labelSelector,
      );
      // list items come without apiVersion/kind; the translator dispatches on kind
      for (const item of l.items) {
        item.apiVersion ??= kind.apiVersion;
        item.kind ??= kind.kind;
      }
      return l;
    };
    const watch = new GoneAwareWatch(this.#kc, (message) => {
      if (!this.#stopped) this.emit('expired', kind.kind, message);
    });
    // A kind is synced once its first list is in the informer's cache. Not on 'connect': client-node's
    // ListWatch emits it before it lists, and a reconcile of that empty cache retracted every Gateway's
    // config and pruned its proxy objects (seen when a restarted controller's lists took longer than
    // the reconcile debounce). The items of a list are added synchronously once it resolves, so the
    // next turn of the loop finds them all.
    const listed = async (): Promise<KubernetesListObject<KubernetesObject>> => {
      let l: KubernetesListObject<KubernetesObject>;
      try {
        l = await list();
        if (w.absent) {
          w.absent = false;
          if (!this.#stopped) this.emit('present', kind.kind);
        }
      } catch (err) {
        if (!kind.optional || !notServed(err)) throw err;
        // Not served: listed, with nothing in it. The watch that follows fails the same way, and the
        // error handler asks again in ABSENT_RECHECK_MS.
        if (!w.absent && !this.#stopped) this.emit('absent', kind.kind, shortError(err));
        w.absent = true;
        l = { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '' }, items: [] };
      }
      if (!w.synced)
        setImmediate(() => {
          if (w.synced || this.#stopped) return;
          w.synced = true;
          if (this.synced()) this.emit('synced');
          this.emit('change');
        });
      return l;
    };
    const informer = new ListWatch<KubernetesObject>(
      kind.path,
      watch,
      listed,
      false,
      kind.labelSelector,
      kind.fieldSelector,
    );
    const w: KindWatch = { kind, informer, synced: false, failures: 0, absent: false };
    const changed = () => {
      if (w.synced) this.emit('change');
    };
    informer.on('add', changed);
    informer.on('update', changed);
    informer.on('delete', changed);
    informer.on('connect', () => {
      w.failures = 0;
    });
    informer.on('error', (err: unknown) => {
      if (this.#stopped) return;
      // an absent kind's watch fails as its list did: said once ('absent'), asked again at a steady pace
      if (w.absent && notServed(err)) {
        w.timer = setTimeout(() => {
          if (!this.#stopped) informer.start().catch(() => undefined);
        }, this.#absentRecheckMs);
        w.timer.unref();
        return;
      }
      w.failures++;
      this.emit('error', kind.kind, shortError(err));
      // restart with backoff: 0.5s doubling to 30s
      const delay = Math.min(30_000, 500 * 2 ** Math.min(6, w.failures - 1));
      w.timer = setTimeout(() => {
        if (!this.#stopped) informer.start().catch(() => undefined);
      }, delay);
      w.timer.unref();
    });
    return w;
  }

  async start(): Promise<void> {
    await Promise.all(
      this.#watches.map((w) =>
        w.informer.start().catch((err: unknown) => {
          // the error handler above schedules the retry
          this.emit('error', w.kind.kind, shortError(err));
        }),
      ),
    );
  }

  /** True once every kind has been listed at least once. */
  synced(): boolean {
    return this.#watches.every((w) => w.synced);
  }

  notSynced(): string[] {
    return this.#watches.filter((w) => !w.synced).map((w) => w.kind.kind);
  }

  snapshot(): KubeObject[] {
    const out: KubeObject[] = [];
    for (const w of this.#watches) {
      for (const o of w.informer.list()) {
        out.push({
          ...(o as unknown as KubeObject),
          apiVersion: o.apiVersion ?? w.kind.apiVersion,
          kind: o.kind ?? w.kind.kind,
        });
      }
    }
    return out;
  }

  get(kind: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const w = this.#watches.find((x) => x.kind.kind === kind);
    const o = w?.informer.get(name, namespace);
    return o ? ({ ...(o as unknown as KubeObject), kind } as KubeObject) : undefined;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const w of this.#watches) clearTimeout(w.timer);
    await Promise.all(this.#watches.map((w) => w.informer.stop().catch(() => undefined)));
  }
}
