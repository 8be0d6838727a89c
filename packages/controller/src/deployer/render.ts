// The data plane of one Gateway as Kubernetes objects: a ServiceAccount named after the Gateway (the
// xDS server binds a proxy's token to the Gateway of its service account), a Service with a port per
// listener port, and a Deployment running `gw --xds-address … --gateway <ns>/<name>` with a projected
// service-account token of the audience the xDS server checks. When the xDS server speaks TLS with its
// own CA, a ConfigMap holds that CA and the same projected volume carries it to the proxy
// (`--xds-ca-file`). Pure: equal inputs give equal objects, so the deployer can tell what changed.
import type { KubeObject } from '../translator/types.ts';

export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'gw-controller';
/** Where the projected xDS token is mounted in the proxy container. */
export const XDS_TOKEN_DIR = '/var/run/secrets/gw';
export const XDS_TOKEN_FILE = `${XDS_TOKEN_DIR}/xds-token`;
/** The xDS server's CA, beside the token in the same projected volume. */
export const XDS_CA_FILE = `${XDS_TOKEN_DIR}/xds-ca.crt`;
/** The ConfigMap holding a Gateway's copy of the xDS CA, and its key. */
export const xdsCaConfigMap = (gateway: string) => `${gateway}-xds-ca`;
export const XDS_CA_KEY = 'ca.crt';
/** The proxy's readiness port and path (spec "Data-plane"). */
export const READINESS_PORT = 15021;
export const READINESS_PATH = '/healthz/ready';
/** The Secret holding a Gateway's session key, and its key. */
export const sessionKeySecret = (gateway: string) => `${gateway}-session-key`;
export const SESSION_KEY_KEY = 'key';

export interface ProxySettings {
  /** The proxy image, e.g. `ghcr.io/example/gw:0.1.0`. */
  image: string;
  pullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** How proxies reach the controller's xDS server, e.g. `https://gw.gw-system.svc:9978`. */
  xdsAddress: string;
  /** PEM of the CA that signed the xDS server's certificate, for an `https://` address (unset: system roots). */
  xdsCa?: string;
  /** The audience of the projected token (the xDS server's `--xds-token-audience`); unset: the API server's. */
  tokenAudience?: string;
  /** Service type; LoadBalancer by default (spec). */
  serviceType?: 'LoadBalancer' | 'ClusterIP' | 'NodePort';
  replicas?: number;
  /** Seconds between SIGTERM and SIGKILL: the proxy drains its connections in that time. */
  terminationGracePeriodSeconds?: number;
}

/** A Gateway's spec.infrastructure: labels and annotations for the objects made for it. */
interface Infrastructure {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface ListenerPort {
  port: number;
  protocol: string;
}

/** The objects that run `gateway`'s proxies, each with its labels and an owner reference to it. */
export function renderProxy(
  gateway: KubeObject,
  ports: readonly ListenerPort[],
  s: ProxySettings,
): KubeObject[] {
  const name = gateway.metadata.name;
  const namespace = gateway.metadata.namespace ?? 'default';
  const selector = { [GATEWAY_NAME_LABEL]: name };
  // Gateway API: the Gateway's spec.infrastructure labels and annotations go on everything made for
  // it (the pods too); its own labels win a key both set, since the selector and pruning read them
  const infra = (gateway.spec as { infrastructure?: Infrastructure } | undefined)?.infrastructure;
  const labels = {
    ...infra?.labels,
    ...selector,
    [MANAGED_BY_LABEL]: MANAGED_BY,
    'app.kubernetes.io/name': 'gw-proxy',
  };
  const annotations =
    infra?.annotations && Object.keys(infra.annotations).length > 0 ? infra.annotations : undefined;
  const metadata = {
    name,
    namespace,
    labels,
    ...(annotations ? { annotations } : {}),
    ownerReferences: [
      {
        apiVersion: gateway.apiVersion,
        kind: 'Gateway',
        name,
        uid: gateway.metadata.uid ?? '',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  };
  const unique = [...new Map(ports.map((p) => [p.port, p])).values()].sort((a, b) => a.port - b.port);
  const serviceAccount: KubeObject = { apiVersion: 'v1', kind: 'ServiceAccount', metadata };
  // The key MCP session ids are sealed with, shared by the Gateway's proxies; the deployer creates it
  // once with a random key (its data is never re-applied) and GwParameters env SESSION_KEY overrides it.
  const sessionKey: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { ...metadata, name: sessionKeySecret(name) },
    type: 'Opaque',
  } as KubeObject;
  const service: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: {
      type: s.serviceType ?? 'LoadBalancer',
      selector,
      ports: unique.map((p) => ({
        name: `${p.protocol.toLowerCase()}-${p.port}`,
        port: p.port,
        targetPort: p.port,
        protocol: 'TCP',
        // a TCP or TLS listener's bytes are not HTTP: no appProtocol says otherwise
        ...(p.protocol === 'HTTPS' || p.protocol === 'HTTP'
          ? { appProtocol: p.protocol === 'HTTPS' ? 'https' : 'http' }
          : {}),
      })),
    },
  };
  const caConfigMap: KubeObject | undefined = s.xdsCa
    ? ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { ...metadata, name: xdsCaConfigMap(name) },
        data: { [XDS_CA_KEY]: s.xdsCa },
      } as KubeObject)
    : undefined;
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: {
      replicas: s.replicas ?? 1,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels, ...(annotations ? { annotations } : {}) },
        spec: {
          serviceAccountName: name,
          // the pod needs only the xDS token below, not the API token
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: s.terminationGracePeriodSeconds ?? 30,
          containers: [
            {
              name: 'gw',
              image: s.image,
              ...(s.pullPolicy ? { imagePullPolicy: s.pullPolicy } : {}),
              args: [
                '--xds-address',
                s.xdsAddress,
                '--gateway',
                `${namespace}/${name}`,
                '--xds-token-file',
                XDS_TOKEN_FILE,
                ...(caConfigMap ? ['--xds-ca-file', XDS_CA_FILE] : []),
              ],
              env: [
                { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                {
                  name: 'SESSION_KEY',
                  valueFrom: { secretKeyRef: { name: sessionKeySecret(name), key: SESSION_KEY_KEY } },
                },
              ],
              ports: [
                ...unique.map((p) => ({ name: `l${p.port}`, containerPort: p.port, protocol: 'TCP' })),
                { name: 'readiness', containerPort: READINESS_PORT, protocol: 'TCP' },
              ],
              readinessProbe: {
                httpGet: { path: READINESS_PATH, port: READINESS_PORT, scheme: 'HTTP' },
                periodSeconds: 5,
                failureThreshold: 2,
              },
              volumeMounts: [{ name: 'xds-token', mountPath: XDS_TOKEN_DIR, readOnly: true }],
            },
          ],
          volumes: [
            {
              name: 'xds-token',
              projected: {
                sources: [
                  {
                    serviceAccountToken: {
                      ...(s.tokenAudience ? { audience: s.tokenAudience } : {}),
                      expirationSeconds: 3600,
                      path: 'xds-token',
                    },
                  },
                  ...(caConfigMap
                    ? [
                        {
                          configMap: {
                            name: xdsCaConfigMap(name),
                            items: [{ key: XDS_CA_KEY, path: 'xds-ca.crt' }],
                          },
                        },
                      ]
                    : []),
                ],
              },
            },
          ],
        },
      },
    },
  };
  return [serviceAccount, sessionKey, ...(caConfigMap ? [caConfigMap] : []), service, deployment];
}
