// The controller loop: informers (provider) → debounce → translate (pure) → xDS server per Gateway,
// and statuses written back by the status writer (status/writer.ts) only when they changed. A
// Gateway's Programmed condition follows its proxies' ACKs and NACKs (status/programmed.ts): an
// answer from a proxy, or a proxy coming or going, rewrites the statuses of the last translation.
// It also keeps its GatewayClass in place and turns a proxy's NACK into a Warning Event on the Gateway.
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { Deployer } from './deployer/deployer.ts';
import { applyParameters } from './deployer/parameters.ts';
import { type ProxySettings, renderProxy } from './deployer/render.ts';
import type { LeaderElector } from './leader.ts';
import {
  DAEMONSET_KIND,
  DEPLOYMENT_KIND,
  INFERENCE_KINDS,
  KubeProvider,
  MODEL_KIND,
  WATCHED,
} from './provider/kube.ts';
import { withProxyStates } from './status/programmed.ts';
import { kubeStatusTarget, StatusWriter } from './status/writer.ts';
import { parametersOf } from './translator/parameters.ts';
import { translate } from './translator/translate.ts';
import type { Condition, NamedResource, StatusUpdate } from './translator/types.ts';
import type { NackEvent, XdsServer } from './xds/server.ts';

export interface ControllerOptions {
  kc: KubeConfig;
  xds: XdsServer;
  controllerName: string;
  gatewayClassName: string;
  clusterDomain: string;
  modelsEnabled: boolean;
  /** Whether InferencePools (and the Pods they pick) are watched and translated. */
  inferenceEnabled?: boolean;
  /** When set, the controller provisions each Gateway's proxies (deployer/) with these settings. */
  deploy?: ProxySettings;
  /** With several replicas: only the leader writes statuses and provisions; every replica serves xDS. */
  leader?: LeaderElector;
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

export class Controller {
  readonly provider: KubeProvider;
  readonly #counts = { translations: 0, lastTranslateMs: 0, nacks: 0, events: 0 };
  readonly #o: ControllerOptions;
  readonly #custom: CustomObjectsApi;
  readonly #core: CoreV1Api;
  readonly #writer: StatusWriter;
  /** The statuses of the last translation, before the proxies' answers are applied. */
  #statuses: StatusUpdate[] | undefined;
  #timer: NodeJS.Timeout | undefined;
  #statusTimer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #gateways = new Set<string>();
  #stopped = false;
  readonly #deployer: Deployer | undefined;

  constructor(o: ControllerOptions) {
    this.#o = o;
    this.provider = new KubeProvider(o.kc, [
      ...WATCHED,
      ...(o.modelsEnabled ? [MODEL_KIND] : []),
      ...(o.inferenceEnabled ? INFERENCE_KINDS : []),
      ...(o.deploy ? [DEPLOYMENT_KIND, DAEMONSET_KIND] : []),
    ]);
    this.#custom = o.kc.makeApiClient(CustomObjectsApi);
    this.#core = o.kc.makeApiClient(CoreV1Api);
    if (o.deploy) this.#deployer = new Deployer(o.kc, (level, msg, fields) => o.log(level, msg, fields));
    this.#writer = new StatusWriter({
      target: kubeStatusTarget(o.kc, (kind, ns, name) => this.provider.get(kind, ns, name)),
      controllerName: o.controllerName,
      log: o.log,
    });
    this.provider.on('change', () => this.#schedule());
    // a new leader writes what the last translation wants (statuses, proxy objects) at once
    o.leader?.on('leading', () => this.#schedule());
    this.provider.on('error', (kind, message) => o.log('warn', 'watch failed; retrying', { kind, message }));
    this.provider.on('absent', (kind, message) =>
      o.log(
        'warn',
        'the API server does not serve this kind (its CRD is not installed): ignored until it is',
        {
          kind,
          message,
        },
      ),
    );
    this.provider.on('present', (kind) => o.log('info', 'the API server serves this kind now', { kind }));
    this.provider.on('expired', (kind, message) =>
      o.log('info', 'watch expired (410 Gone); listing again', { kind, message }),
    );
    o.xds.on('nack', (e) => void this.#nack(e));
    // what the proxies answer decides Programmed
    for (const e of ['ack', 'nack', 'connect', 'disconnect'] as const)
      o.xds.on(e, () => this.#scheduleStatus());
  }

  get metrics(): ControllerMetrics {
    return {
      ...this.#counts,
      statusWrites: this.#writer.metrics.writes,
      statusWriteErrors: this.#writer.metrics.errors,
    };
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

  /** Rewrites the last translation's statuses with the proxies' answers (a burst of answers is one pass). */
  #scheduleStatus(): void {
    if (this.#stopped) return;
    clearTimeout(this.#statusTimer);
    this.#statusTimer = setTimeout(() => {
      if (this.#statuses) void this.#writeStatuses(this.#statuses);
    }, this.#o.debounceMs ?? 50);
  }

  /** Whether this replica writes to the API server (statuses, proxy objects). */
  #writes(): boolean {
    return !this.#o.leader || this.#o.leader.leading;
  }

  #writeStatuses(statuses: StatusUpdate[]): Promise<void> {
    if (!this.#writes()) return Promise.resolve();
    const previous = (ns: string, name: string) =>
      (
        (this.provider.get('Gateway', ns, name)?.status as { conditions?: Condition[] } | undefined)
          ?.conditions ?? []
      ).find((c) => c.type === 'Programmed');
    const deployment = (ns: string, name: string) => {
      if (!this.#o.deploy) return undefined;
      const d = this.provider.get('Deployment', ns, name);
      if (d) {
        const spec = d.spec as { replicas?: number } | undefined;
        const status = d.status as { availableReplicas?: number } | undefined;
        return { desired: spec?.replicas ?? 1, available: status?.availableReplicas ?? 0 };
      }
      const ds = this.provider.get('DaemonSet', ns, name);
      if (!ds) return undefined;
      const status = ds.status as { desiredNumberScheduled?: number; numberAvailable?: number } | undefined;
      return { desired: status?.desiredNumberScheduled ?? 0, available: status?.numberAvailable ?? 0 };
    };
    return this.#writer.write(
      withProxyStates(statuses, (gw) => this.#o.xds.proxyStates(gw), previous, deployment),
    );
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
        ...(this.#o.inferenceEnabled ? { inferenceEnabled: true } : {}),
      },
      { clusterDomain: this.#o.clusterDomain },
    );
    this.#counts.translations++;
    this.#counts.lastTranslateMs = performance.now() - start;
    const seen = new Set<string>();
    for (const [gw, resources] of Object.entries(out.gateways)) {
      this.#o.xds.setResources(gw, resources);
      seen.add(gw);
    }
    for (const gw of this.#gateways) if (!seen.has(gw)) this.#o.xds.deleteGateway(gw);
    this.#gateways = seen;
    this.#statuses = out.statuses;
    await this.#writeStatuses(out.statuses);
    if (this.#deployer && this.#writes()) {
      // the kinds watched here: a provisioned object deleted by someone else is put back
      const watched = new Set(['Deployment', 'DaemonSet', 'Service', 'Secret', 'ConfigMap']);
      await this.#deployer.reconcile(this.#proxyObjects(out.gateways), (kind, ns, name) =>
        watched.has(kind) ? this.provider.get(kind, ns, name) !== undefined : undefined,
      );
    }
  }

  /** Each Gateway's proxy objects; a Gateway without a listener to serve gets none. */
  #proxyObjects(gateways: Record<string, NamedResource[]>) {
    const settings = this.#o.deploy as ProxySettings;
    return Object.entries(gateways).flatMap(([key, resources]) => {
      const [ns, name] = key.split('/') as [string, string];
      const gateway = this.provider.get('Gateway', ns, name);
      const ports = resources.flatMap((r) =>
        'bind' in r.resource
          ? [
              {
                port: r.resource.bind['port'] as number,
                protocol: (r.resource.bind['listeners'] as { protocol: string }[])[0]?.protocol ?? 'HTTP',
              },
            ]
          : [],
      );
      if (!gateway || ports.length === 0) return [];
      const className = (gateway.spec as { gatewayClassName?: string } | undefined)?.gatewayClassName ?? '';
      const params = parametersOf(
        this.provider.get('GatewayClass', undefined, className),
        gateway,
        (pns, pname) => this.provider.get('GwParameters', pns, pname),
      );
      return applyParameters(renderProxy(gateway, ports, settings), params);
    });
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
    this.#counts.nacks++;
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
      this.#counts.events++;
    } catch (err) {
      this.#o.log('warn', 'could not record the NACK event', { err: String(err) });
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#o.leader?.stop();
    clearTimeout(this.#timer);
    clearTimeout(this.#statusTimer);
    await this.provider.stop();
    await this.#running;
  }
}
