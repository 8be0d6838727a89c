// The Kubernetes side of gwctl: loads the kubeconfig the way kubectl does, and turns API failures into
// errors that name the API server, the context and the permission involved.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  type RequestContext,
  type V1Pod,
} from '@kubernetes/client-node';
import { causeOf, GwctlError } from './errors.ts';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';
/** An API server that accepts the connection but never answers must not hang gwctl. */
const API_TIMEOUT_MS = 15_000;

export interface Cluster {
  kc: KubeConfig;
  /** The API server URL; every error names it. */
  server: string;
  context: string;
  /** The context's namespace, else `default`. */
  namespace: string;
}

/** What the user was trying to do, phrased as the RBAC permission it needs. */
export interface Action {
  verb: string;
  resource: string;
  namespace: string;
}

const kubeconfigError = (message: string) => new GwctlError('GWCTL_ERR_KUBECONFIG', message);

function loadFile(kc: KubeConfig, file: string): void {
  try {
    kc.loadFromFile(file);
  } catch (err) {
    throw kubeconfigError(`cannot load kubeconfig ${file}: ${causeOf(err)}`);
  }
}

/** KUBECONFIG (a list, merged; the first current-context wins), else ~/.kube/config, else in-cluster. */
function load(env: NodeJS.ProcessEnv): { kc: KubeConfig; source: string } {
  const kc = new KubeConfig();
  if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(delimiter).filter(Boolean);
    // As in kubectl, a missing file in the list is skipped; only a list of nothing but missing ones fails.
    const present = files.filter((f) => existsSync(f));
    const [first, ...rest] = present;
    if (first === undefined) {
      throw kubeconfigError(
        `KUBECONFIG names ${files.join(delimiter)}, which does not exist${files.length > 1 ? ' (none of them)' : ''}`,
      );
    }
    loadFile(kc, first);
    for (const file of rest) {
      const more = new KubeConfig();
      loadFile(more, file);
      try {
        kc.mergeConfig(more, Boolean(kc.currentContext));
      } catch (err) {
        throw kubeconfigError(`cannot merge kubeconfig ${file}: ${causeOf(err)}`);
      }
    }
    return { kc, source: present.join(delimiter) };
  }
  const home = join(env.HOME || homedir(), '.kube', 'config');
  if (existsSync(home)) {
    loadFile(kc, home);
    return { kc, source: home };
  }
  if (env.KUBERNETES_SERVICE_HOST && existsSync(SERVICE_ACCOUNT_TOKEN)) {
    kc.loadFromCluster();
    return { kc, source: 'the in-cluster service account' };
  }
  throw kubeconfigError(
    `no kubeconfig: KUBECONFIG is not set, ${home} does not exist and gwctl is not running in a cluster`,
  );
}

export function loadCluster(opts: { context?: string | undefined; env?: NodeJS.ProcessEnv } = {}): Cluster {
  const { kc, source } = load(opts.env ?? process.env);
  if (opts.context !== undefined) {
    if (!kc.getContextObject(opts.context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw kubeconfigError(
        `context ${opts.context} is not in ${source} (${known.length ? `contexts: ${known.join(', ')}` : 'it has none'})`,
      );
    }
    kc.setCurrentContext(opts.context);
  }
  const context = kc.getCurrentContext();
  const ctx = context ? kc.getContextObject(context) : null;
  if (!ctx) {
    throw kubeconfigError(
      context
        ? `the current context ${context} is not defined in ${source}`
        : `${source} sets no current context; pass --context or run 'kubectl config use-context'`,
    );
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster)
    throw kubeconfigError(`context ${context} names cluster ${ctx.cluster}, which ${source} does not define`);
  return { kc, server: cluster.server, context, namespace: ctx.namespace || 'default' };
}

const describe = (a: Action) => `${a.verb} ${a.resource} in namespace ${a.namespace}`;

/** The API server's own explanation, from a Status body when there is one. */
function serverMessage(body: unknown): string {
  if (typeof body !== 'string') return '';
  try {
    const status = JSON.parse(body) as { message?: unknown };
    if (typeof status.message === 'string') return status.message;
  } catch {}
  return body.trim().slice(0, 300);
}

/** The error for an HTTP status the API server answered `action` with. */
export function statusError(c: Cluster, action: Action, status: number, message = ''): GwctlError {
  const said = message ? `; the server said: ${message}` : '';
  if (status === 401) {
    return new GwctlError(
      'GWCTL_ERR_CLUSTER_STATUS',
      `the API server at ${c.server} rejected the credentials of context ${c.context} (401 Unauthorized)${said}`,
    );
  }
  if (status === 403) {
    return new GwctlError(
      'GWCTL_ERR_FORBIDDEN',
      `forbidden: context ${c.context} may not ${describe(action)} (403 from ${c.server}); ` +
        `the missing RBAC permission is verb "${action.verb}" on "${action.resource}" in namespace ${action.namespace}${said}`,
    );
  }
  return new GwctlError(
    'GWCTL_ERR_CLUSTER_STATUS',
    `the API server at ${c.server} answered ${status} to ${describe(action)}${said}`,
  );
}

/** The error for a failed API call: unreachable, timed out, refused with a status, or failed before sending. */
export function apiError(c: Cluster, action: Action, err: unknown): GwctlError {
  if (err instanceof GwctlError) return err;
  if (err instanceof ApiException) return statusError(c, action, err.code, serverMessage(err.body));
  const e = err as { name?: string; cause?: unknown; code?: unknown };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') {
    return new GwctlError(
      'GWCTL_ERR_CLUSTER_UNREACHABLE',
      `the API server at ${c.server} (context ${c.context}) did not answer within ${API_TIMEOUT_MS / 1000} s`,
    );
  }
  // fetch reports network failures with a cause; anything else failed before a request was sent
  // (an exec credential plugin, a missing client certificate file, ...).
  if (e.cause !== undefined || typeof e.code === 'string') {
    return new GwctlError(
      'GWCTL_ERR_CLUSTER_UNREACHABLE',
      `cannot reach the API server at ${c.server} (context ${c.context}): ${causeOf(err)}`,
    );
  }
  return new GwctlError(
    'GWCTL_ERR_CLUSTER_UNREACHABLE',
    `cannot ${describe(action)} through ${c.server} (context ${c.context}): ${causeOf(err)}`,
  );
}

export async function listPods(c: Cluster, namespace: string, labelSelector: string): Promise<V1Pod[]> {
  const action = { verb: 'list', resource: 'pods', namespace };
  const signal = AbortSignal.timeout(API_TIMEOUT_MS);
  // The generated client has no per-call timeout; authentication is the one hook that sees the request.
  const auth = {
    getName: () => 'gwctl',
    applySecurityAuthentication: async (ctx: RequestContext) => {
      await c.kc.applySecurityAuthentication(ctx);
      ctx.setSignal(signal);
    },
  };
  try {
    const list = await c.kc
      .makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace, labelSelector }, { authMethods: { default: auth } });
    return list.items;
  } catch (err) {
    throw apiError(c, action, err);
  }
}
