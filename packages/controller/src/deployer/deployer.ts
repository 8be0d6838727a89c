// Provisions each Gateway's data plane (render.ts) by server-side apply with field manager
// `gw-controller`, and prunes what no longer belongs: objects we labelled for a Gateway that is gone,
// or that its Gateway no longer needs. The API server's garbage collector would also remove them by
// their owner reference, but a cluster without one (and the test harness) must not keep stale proxies.
// An object is applied again only when what we want of it changed, so a reconcile that changes nothing
// costs no API call.
import { createHash, randomBytes } from 'node:crypto';
import {
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
} from '@kubernetes/client-node';
import type { KubeObject } from '../translator/types.ts';
import { GATEWAY_NAME_LABEL, MANAGED_BY, MANAGED_BY_LABEL, SESSION_KEY_KEY } from './render.ts';

export const FIELD_MANAGER = 'gw-controller';

/** The kinds the deployer writes, in the order they are applied (the Deployment's account first). */
const KINDS = [
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'v1', kind: 'Secret' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' },
  { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' },
] as const;

export interface DeployerMetrics {
  applied: number;
  pruned: number;
  errors: number;
}

type Log = (level: 'info' | 'warn', msg: string, fields: Record<string, unknown>) => void;

const keyOf = (o: { kind?: string; metadata?: { namespace?: string; name?: string } }) =>
  `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
const hashOf = (o: unknown) => createHash('sha256').update(JSON.stringify(o)).digest('hex');

export class Deployer {
  readonly metrics: DeployerMetrics = { applied: 0, pruned: 0, errors: 0 };
  readonly #api: KubernetesObjectApi;
  readonly #log: Log;
  /** Object key → hash of what was last applied successfully. */
  readonly #applied = new Map<string, string>();
  #prunedFor: string | undefined;

  constructor(kc: KubeConfig, log: Log) {
    this.#api = KubernetesObjectApi.makeApiClient(kc);
    this.#log = log;
  }

  /** Applies `desired` (every managed object of every Gateway) and deletes the managed objects not in it. */
  /**
   * `present` tells, for kinds the controller watches, whether an object exists now (undefined: not
   * known): one deleted behind our back is applied again although what we want of it did not change.
   */
  async reconcile(
    desired: readonly KubeObject[],
    present: (kind: string, namespace: string, name: string) => boolean | undefined = () => undefined,
  ): Promise<void> {
    const keys = new Set<string>();
    const order = (o: KubeObject) => KINDS.findIndex((k) => k.kind === o.kind);
    for (const o of [...desired].sort((a, b) => order(a) - order(b))) {
      const key = keyOf(o);
      keys.add(key);
      const hash = hashOf(o);
      const gone = present(o.kind, o.metadata.namespace ?? 'default', o.metadata.name) === false;
      if (this.#applied.get(key) === hash && !gone) continue;
      try {
        if (o.kind === 'Secret') {
          await this.#createSecret(o);
          this.#applied.set(key, hash);
          continue;
        }
        await this.#api.patch(
          o as unknown as KubernetesObject,
          undefined,
          undefined,
          FIELD_MANAGER,
          true,
          PatchStrategy.ServerSideApply,
        );
        this.#applied.set(key, hash);
        this.metrics.applied++;
      } catch (err) {
        this.metrics.errors++;
        this.#applied.delete(key);
        this.#log('warn', 'could not apply a proxy object', { object: key, err: errorText(err) });
      }
    }
    // Listing is only needed when the set of objects changed (or on the first pass).
    const set = [...keys].sort().join('\n');
    if (set === this.#prunedFor) return;
    if (await this.#prune(keys)) this.#prunedFor = set;
  }

  /**
   * A Secret is created once, with a random key, and never re-applied (that would change the key).
   * The key reaches the proxy as an environment variable (SESSION_KEY), which cannot carry every
   * byte (a NUL ends it): its value is the 32 random bytes written as base64url text.
   */
  async #createSecret(o: KubeObject): Promise<void> {
    const text = randomBytes(32).toString('base64url');
    const body = { ...o, data: { [SESSION_KEY_KEY]: Buffer.from(text).toString('base64') } };
    try {
      await this.#api.create(body as unknown as KubernetesObject, undefined, undefined, FIELD_MANAGER);
      this.metrics.applied++;
    } catch (err) {
      if (!errorText(err).includes('409')) throw err;
    }
  }

  /** Deletes managed objects not in `keep`; false when a list failed (try again next pass). */
  async #prune(keep: Set<string>): Promise<boolean> {
    let complete = true;
    for (const { apiVersion, kind } of KINDS) {
      let items: KubernetesObject[];
      try {
        const list = await this.#api.list(
          apiVersion,
          kind,
          undefined, // every namespace
          undefined,
          undefined,
          undefined,
          undefined, // fieldSelector
          `${MANAGED_BY_LABEL}=${MANAGED_BY},${GATEWAY_NAME_LABEL}`,
        );
        items = list.items;
      } catch (err) {
        complete = false;
        this.#log('warn', 'could not list proxy objects to prune', { kind, err: errorText(err) });
        continue;
      }
      for (const item of items) {
        const key = keyOf({ ...item, kind });
        if (keep.has(key)) continue;
        try {
          await this.#api.delete({ apiVersion, kind, metadata: item.metadata } as KubernetesObject);
          this.#applied.delete(key);
          this.metrics.pruned++;
          this.#log('info', 'pruned a proxy object', { object: key });
        } catch (err) {
          if (errorText(err).includes('404')) continue;
          complete = false;
          this.metrics.errors++;
          this.#log('warn', 'could not prune a proxy object', { object: key, err: errorText(err) });
        }
      }
    }
    return complete;
  }
}

function errorText(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  const body = typeof e.body === 'string' ? e.body : e.body ? JSON.stringify(e.body) : '';
  return `${e.code ?? ''} ${e.message ?? String(err)} ${body}`.trim().slice(0, 500);
}
