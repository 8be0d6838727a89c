// The controller loop: informers (provider) → debounce → translate (pure) → xDS server per Gateway,
// and statuses merged and written back only when they changed. It also keeps its GatewayClass in
// place and turns a proxy's NACK into a Warning Event on the Gateway.
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { KubeProvider, MODEL_KIND, WATCHED } from './provider/kube.ts';
import { mergeStatus, statusChanged } from './status/merge.ts';
import { translate } from './translator/translate.ts';
import type { StatusUpdate } from './translator/types.ts';
import type { NackEvent, XdsServer } from './xds/server.ts';

export interface ControllerOptions {
  kc: KubeConfig;
  xds: XdsServer;
  controllerName: string;
  gatewayClassName: string;
  clusterDomain: string;
  modelsEnabled: boolean;
  /** Debounce between an event and the translation it triggers. */
  debounceMs?: number;
  log: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

export interface ControllerMetrics {
  translations: number;
  lastTranslateMs: number;
  statusWrites: number;
  statusWriteErrors: number;
  nacks: number;
  events: number;
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
  GwPolicy: { group: 'gw.dev', version: 'v1alpha1', plural: 'gwpolicies' },
  GwBackend: { group: 'gw.dev', version: 'v1alpha1', plural: 'gwbackends' },
  GwModel: { group: 'gw.dev', version: 'v1alpha1', plural: 'gwmodels' },
};

export class Controller {
  readonly provider: KubeProvider;
  readonly metrics: ControllerMetrics = {
    translations: 0,
    lastTranslateMs: 0,
    statusWrites: 0,
    statusWriteErrors: 0,
    nacks: 0,
    events: 0,
  };
  readonly #o: ControllerOptions;
  readonly #custom: CustomObjectsApi;
  readonly #core: CoreV1Api;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #gateways = new Set<string>();
  #stopped = false;

  constructor(o: ControllerOptions) {
    this.#o = o;
    this.provider = new KubeProvider(o.kc, o.modelsEnabled ? [...WATCHED, MODEL_KIND] : WATCHED);
    this.#custom = o.kc.makeApiClient(CustomObjectsApi);
    this.#core = o.kc.makeApiClient(CoreV1Api);
    this.provider.on('change', () => this.#schedule());
    this.provider.on('error', (kind, message) => o.log('warn', 'watch failed; retrying', { kind, message }));
    o.xds.on('nack', (e) => void this.#nack(e));
  }

  async start(): Promise<void> {
    await this.provider.start();
    await this.#ensureGatewayClass();
  }

  ready(): boolean {
    return this.provider.synced();
  }

  #schedule(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#run(), this.#o.debounceMs ?? 50);
  }

  #run(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#reconcile()
      .catch((err: unknown) => this.#o.log('error', 'reconcile failed', { err: String(err) }))
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.#run();
        }
      });
  }

  /** Translates the current snapshot once (exported for tests and the first sync). */
  async #reconcile(): Promise<void> {
    if (!this.provider.synced()) return; // a partial snapshot would retract config from proxies
    const start = performance.now();
    const out = translate(
      {
        objects: this.provider.snapshot(),
        controllerName: this.#o.controllerName,
        modelsEnabled: this.#o.modelsEnabled,
      },
      { clusterDomain: this.#o.clusterDomain },
    );
    this.metrics.translations++;
    this.metrics.lastTranslateMs = performance.now() - start;
    const seen = new Set<string>();
    for (const [gw, resources] of Object.entries(out.gateways)) {
      this.#o.xds.setResources(gw, resources);
      seen.add(gw);
    }
    for (const gw of this.#gateways) if (!seen.has(gw)) this.#o.xds.deleteGateway(gw);
    this.#gateways = seen;
    for (const s of out.statuses) await this.#writeStatus(s);
  }

  async #writeStatus(s: StatusUpdate): Promise<void> {
    const g = GROUPS[s.kind];
    if (!g) return;
    const current = this.provider.get(s.kind, s.namespace, s.name);
    if (!current) return;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const next = mergeStatus(
      s.kind,
      current.status as Record<string, unknown> | undefined,
      s.status,
      this.#o.controllerName,
      now,
    );
    if (!statusChanged(current.status, next)) return;
    const opts = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    // a merge patch replaces lists whole: the merged lists above carry the other controllers' entries
    const body = { status: next };
    try {
      if (g.cluster) {
        await this.#custom.patchClusterCustomObjectStatus(
          { group: g.group, version: g.version, plural: g.plural, name: s.name, body },
          opts,
        );
      } else {
        await this.#custom.patchNamespacedCustomObjectStatus(
          {
            group: g.group,
            version: g.version,
            namespace: s.namespace ?? 'default',
            plural: g.plural,
            name: s.name,
            body,
          },
          opts,
        );
      }
      this.metrics.statusWrites++;
    } catch (err) {
      this.metrics.statusWriteErrors++;
      this.#o.log('warn', 'status write failed', {
        kind: s.kind,
        namespace: s.namespace,
        name: s.name,
        err: String(err),
      });
    }
  }

  /** Creates our GatewayClass when it is missing; users may edit it afterwards. */
  async #ensureGatewayClass(): Promise<void> {
    if (this.provider.get('GatewayClass', undefined, this.#o.gatewayClassName)) return;
    try {
      await this.#custom.createClusterCustomObject({
        group: 'gateway.networking.k8s.io',
        version: 'v1',
        plural: 'gatewayclasses',
        body: {
          apiVersion: 'gateway.networking.k8s.io/v1',
          kind: 'GatewayClass',
          metadata: { name: this.#o.gatewayClassName },
          spec: { controllerName: this.#o.controllerName, description: 'gw: HTTP, LLM, MCP and A2A gateway' },
        },
      });
      this.#o.log('info', 'created GatewayClass', { name: this.#o.gatewayClassName });
    } catch (err) {
      // 409: someone created it meanwhile
      if (!String(err).includes('409'))
        this.#o.log('warn', 'could not create GatewayClass', { err: String(err) });
    }
  }

  async #nack(e: NackEvent): Promise<void> {
    this.metrics.nacks++;
    const [namespace, name] = e.gateway.split('/') as [string, string];
    this.#o.log('warn', 'proxy rejected its configuration', {
      gateway: e.gateway,
      node: e.node,
      message: e.message,
    });
    const now = new Date().toISOString();
    try {
      await this.#core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${name}.`, namespace },
          involvedObject: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', namespace, name },
          type: 'Warning',
          reason: 'ConfigRejected',
          message: `proxy ${e.node} rejected its configuration: ${e.message}`.slice(0, 1024),
          source: { component: 'gw-controller' },
          firstTimestamp: now as unknown as Date,
          lastTimestamp: now as unknown as Date,
          count: 1,
        },
      });
      this.metrics.events++;
    } catch (err) {
      this.#o.log('warn', 'could not record the NACK event', { err: String(err) });
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.provider.stop();
    await this.#running;
  }
}
