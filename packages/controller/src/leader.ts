// Leader election with a coordination.k8s.io Lease, so that of several controller replicas one writes
// statuses and provisions proxies while every replica serves xDS. The rules are client-go's: a
// candidate takes the Lease when it is free or when its holder has not renewed it for
// leaseDurationSeconds, measured on the candidate's own clock from the moment it last saw the Lease
// change (so clocks need not agree); the holder renews every renew period and steps down when it could
// not renew for a whole lease duration; updates carry the resourceVersion they read, so two candidates
// cannot both win. A replica that stops releases the Lease, so the next one need not wait it out.
import { EventEmitter } from 'node:events';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';

/** The parts of a Lease read and written here; times are MicroTime strings (RFC 3339, microseconds). */
interface Lease {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

// client-node's typed Lease API writes its times with milliseconds, which the API server refuses for a
// MicroTime (400); the generic object API sends the body as written.
const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };
const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export interface LeaderOptions {
  namespace: string;
  name: string;
  /** This replica, e.g. its pod name. */
  identity: string;
  /** How long a Lease not renewed stays its holder's (default 15 s). */
  leaseSeconds?: number;
  /** How often the holder renews and a candidate tries (default 5 s, or a third of leaseSeconds). */
  retryMs?: number;
  log: (level: 'info' | 'warn', msg: string, fields: Record<string, unknown>) => void;
}

export interface LeaderEvents {
  /** This replica became the leader. */
  leading: [];
  /** This replica stopped being the leader (another took over, or renewing failed). */
  following: [holder: string | undefined];
}

export class LeaderElector extends EventEmitter<LeaderEvents> {
  readonly #api: CustomObjectsApi;
  readonly #o: Required<Omit<LeaderOptions, 'log'>> & Pick<LeaderOptions, 'log'>;
  #leading = false;
  /** The Lease as last read, and when (on our clock) its holder or renew time last changed. */
  #observed: { holder: string | undefined; renew: string | undefined; at: number } | undefined;
  #lastRenewed = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(kc: KubeConfig, o: LeaderOptions) {
    super();
    this.#api = kc.makeApiClient(CustomObjectsApi);
    const leaseSeconds = o.leaseSeconds ?? 15;
    this.#o = { ...o, leaseSeconds, retryMs: o.retryMs ?? Math.min(5000, (leaseSeconds * 1000) / 3) };
  }

  get leading(): boolean {
    return this.#leading;
  }

  start(): void {
    void this.#round();
  }

  async #round(): Promise<void> {
    if (this.#stopped) return;
    try {
      await this.#tryAcquireOrRenew();
    } catch (err) {
      this.#o.log('warn', 'leader election: the Lease could not be read or written', { err: brief(err) });
    }
    // a leader that could not renew for a whole lease duration may have been replaced: step down
    if (this.#leading && Date.now() - this.#lastRenewed > this.#o.leaseSeconds * 1000)
      this.#setLeading(false);
    if (!this.#stopped) this.#timer = setTimeout(() => void this.#round(), this.#o.retryMs);
  }

  async #tryAcquireOrRenew(): Promise<void> {
    const { namespace, name, identity, leaseSeconds } = this.#o;
    const now = microTime(new Date());
    let lease: Lease;
    try {
      lease = (await this.#api.getNamespacedCustomObject({ ...LEASES, namespace, name })) as Lease;
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      await this.#api.createNamespacedCustomObject({
        ...LEASES,
        namespace,
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: leaseSeconds,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
          },
        },
      });
      this.#renewed();
      return;
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity || undefined;
    const renew = spec.renewTime;
    if (!this.#observed || this.#observed.holder !== holder || this.#observed.renew !== renew)
      this.#observed = { holder, renew, at: Date.now() };
    const duration = (spec.leaseDurationSeconds ?? leaseSeconds) * 1000;
    const expired = this.#observed.at + duration < Date.now();
    if (holder !== undefined && holder !== identity && !expired) {
      if (this.#leading) this.#setLeading(false, holder);
      return;
    }
    const takeover = holder !== identity;
    lease.spec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds: leaseSeconds,
      renewTime: now,
      ...(takeover ? { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 } : {}),
    };
    // the resourceVersion read above makes this fail (409) when another replica wrote meanwhile
    await this.#api.replaceNamespacedCustomObject({ ...LEASES, namespace, name, body: lease });
    if (takeover) this.#o.log('info', 'leader election: took the Lease', { from: holder ?? '(free)' });
    this.#renewed();
  }

  #renewed(): void {
    this.#lastRenewed = Date.now();
    this.#observed = undefined;
    if (!this.#leading) this.#setLeading(true);
  }

  #setLeading(on: boolean, holder?: string): void {
    this.#leading = on;
    this.#o.log('info', on ? 'leading: this replica writes status and provisions proxies' : 'following', {
      identity: this.#o.identity,
      ...(holder ? { leader: holder } : {}),
    });
    if (on) this.emit('leading');
    else this.emit('following', holder);
  }

  /** Stops trying; a leader releases the Lease so another replica can take it at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    if (!this.#leading) return;
    this.#leading = false;
    const { namespace, name } = this.#o;
    try {
      const lease = (await this.#api.getNamespacedCustomObject({ ...LEASES, namespace, name })) as Lease;
      if (lease.spec?.holderIdentity !== this.#o.identity) return;
      lease.spec = {
        ...lease.spec,
        holderIdentity: '',
        leaseDurationSeconds: 1,
        renewTime: microTime(new Date()),
      };
      await this.#api.replaceNamespacedCustomObject({ ...LEASES, namespace, name, body: lease });
    } catch (err) {
      this.#o.log('warn', 'leader election: could not release the Lease', { err: brief(err) });
    }
  }
}

function statusOf(err: unknown): number | undefined {
  const e = err as { code?: number; statusCode?: number };
  return e.code ?? e.statusCode;
}

function brief(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0]?.slice(0, 300) ?? text;
}
