// `gw-controller`: watches Gateway API and gw.dev resources, translates them, serves the result to
// proxies over delta ADS (xDS) and writes status back. Runs with KUBECONFIG outside a cluster and with
// the mounted service account inside one.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { processMetricsText } from '@gw/api/process-metrics';
import { KubeConfig } from '@kubernetes/client-node';
import { Controller } from './controller.ts';
import { LeaderElector } from './leader.ts';
import { issueServing, servingNames } from './xds/ca.ts';
import { loadOrCreateCa } from './xds/ca-store.ts';
import { startXdsServer, type XdsMode } from './xds/server.ts';
import { type KubeConnection, tokenReviewAuthenticator } from './xds/token-review.ts';

const VERSION = '0.1.0';
const USAGE = `Usage: gw-controller [flags]

  --kubeconfig <path>        kubeconfig (default: $KUBECONFIG, else in-cluster service account)
  --xds-port <port>          xDS gRPC port (default 9978)
  --xds-address <ip>         address the xDS server binds (default 0.0.0.0)
  --xds-mode <mode>          plaintext | tls | either (both on one port) (default plaintext)
  --xds-cert <file>, --xds-key <file>
                             serving certificate chain and key for tls and either; without them the
                             controller serves with a certificate of its own CA (--xds-ca-secret)
  --xds-ca-secret <name>     Secret in the controller's namespace holding its own xDS CA, created or
                             filled when empty, shared by replicas (default gw-xds-ca)
  --xds-ca-file <file>       with --xds-cert: the CA provisioned proxies trust (default: system roots)
  --xds-auth <bool>          check proxy tokens with TokenReview (default true; false for local development)
  --xds-token-audience <a>   audience the proxy tokens must carry (default: none required)
  --health-port <port>       /healthz and /readyz (default 9093)
  --metrics-port <port>      Prometheus metrics (default 9092)
  --controller-name <name>   GatewayClass controllerName handled (default gw.dev/gw)
  --gateway-class <name>     GatewayClass created when missing (default gw)
  --cluster-domain <domain>  Service DNS suffix (default cluster.local)
  --enable-models            watch GwModel resources (experimental)
  --enable-inference-extension  route to Gateway API Inference Extension InferencePools (watches them
                             and Pods)
  --proxy-image <image>      provision each Gateway's proxies (ServiceAccount, Service, Deployment) with this image
  --proxy-xds-address <url>  how provisioned proxies reach this xDS server (default http://gw.$POD_NAMESPACE.svc:<xds-port>,
                             https:// in tls and either mode; their serving certificate names its host)
  --proxy-service-type <t>   LoadBalancer (default) | ClusterIP | NodePort
  --leader-elect             with several replicas: one (holding a Lease) writes status and provisions
  --leader-election-namespace <ns>  where the Lease gw-controller lives (default $POD_NAMESPACE, else gw-system)
  --leader-lease-seconds <s> how long an unrenewed Lease stays its holder's (default 15)
  --version, --help

Environment: GW_LOG_LEVEL debug | info (default) | warn | error.
`;

function fail(message: string): never {
  process.stderr.write(`gw-controller: ${message}\n`);
  process.exit(2);
}

const OPTIONS = {
  kubeconfig: { type: 'string' },
  'xds-port': { type: 'string', default: process.env['GW_XDS_PORT'] ?? '9978' },
  'xds-address': { type: 'string', default: '0.0.0.0' },
  'xds-mode': { type: 'string', default: process.env['GW_XDS_MODE'] ?? 'plaintext' },
  'xds-cert': { type: 'string' },
  'xds-key': { type: 'string' },
  'xds-ca-secret': { type: 'string', default: 'gw-xds-ca' },
  'xds-ca-file': { type: 'string' },
  'xds-auth': { type: 'string', default: process.env['GW_XDS_AUTH'] ?? 'true' },
  'xds-token-audience': { type: 'string' },
  'health-port': { type: 'string', default: '9093' },
  'metrics-port': { type: 'string', default: '9092' },
  'controller-name': { type: 'string', default: 'gw.dev/gw' },
  'gateway-class': { type: 'string', default: 'gw' },
  'cluster-domain': { type: 'string', default: 'cluster.local' },
  'enable-models': { type: 'boolean', default: false },
  'enable-inference-extension': { type: 'boolean', default: false },
  'proxy-image': { type: 'string', default: process.env['GW_PROXY_IMAGE'] },
  'proxy-xds-address': { type: 'string' },
  'proxy-service-type': { type: 'string', default: 'LoadBalancer' },
  'leader-elect': { type: 'boolean', default: false },
  'leader-election-namespace': { type: 'string' },
  'leader-lease-seconds': { type: 'string', default: '15' },
  version: { type: 'boolean', short: 'V' },
  help: { type: 'boolean', short: 'h' },
} as const;

const parsed = (() => {
  try {
    return parseArgs({ options: OPTIONS, strict: true });
  } catch (err) {
    // an unknown or malformed flag (a typo in the chart's controller.extraArgs): say which, and how
    process.stderr.write(`gw-controller: ${(err as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
})();
const { values } = parsed;
if (values.version) {
  process.stdout.write(`gw-controller ${VERSION} (node ${process.versions.node})\n`);
  process.exit(0);
}
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

function port(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    fail(`--${name} must be a port number, got ${JSON.stringify(v)}`);
  return n;
}
const mode = values['xds-mode'] as XdsMode;
if (!['plaintext', 'tls', 'either'].includes(mode))
  fail(`--xds-mode must be plaintext, tls or either, got ${mode}`);
const auth = values['xds-auth'];
if (auth !== 'true' && auth !== 'false') fail(`--xds-auth must be true or false, got ${auth}`);

// GW_LOG_LEVEL (the chart's controller.logLevel): info (default), warn or error; lower lines are dropped
const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
const minLevel = LEVELS.indexOf(
  (process.env['GW_LOG_LEVEL'] ?? 'info').toLowerCase() as (typeof LEVELS)[number],
);
if (minLevel < 0)
  fail(
    `GW_LOG_LEVEL must be one of ${LEVELS.join(', ')}, got ${JSON.stringify(process.env['GW_LOG_LEVEL'])}`,
  );
const log = (level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}) => {
  if (LEVELS.indexOf(level) < minLevel) return;
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
};

const kc = new KubeConfig();
const kubeconfig = values.kubeconfig ?? process.env['KUBECONFIG'];
try {
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromCluster();
} catch (err) {
  fail(
    `cannot load ${kubeconfig ? `kubeconfig ${kubeconfig}` : 'the in-cluster service account'}: ${String(err)}`,
  );
}

/** What TokenReview needs to call the API server as the controller. */
function connection(k: KubeConfig): KubeConnection {
  const cluster = k.getCurrentCluster();
  const user = k.getCurrentUser();
  if (!cluster) fail('the kubeconfig has no current cluster');
  const read = (data?: string, file?: string) =>
    data ? Buffer.from(data, 'base64') : file ? readFileSync(file) : undefined;
  const ca = read(cluster.caData, cluster.caFile);
  const cert = read(user?.certData, user?.certFile);
  const key = read(user?.keyData, user?.keyFile);
  const token =
    user?.token ??
    (user?.authProvider?.config?.['tokenFile']
      ? readFileSync(user.authProvider.config['tokenFile'], 'utf8').trim()
      : undefined);
  return {
    server: cluster.server,
    ...(token ? { token } : {}),
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
  };
}

const namespace = process.env['POD_NAMESPACE'] ?? 'gw-system';
const xdsPort = port('xds-port', values['xds-port']);
if (Boolean(values['xds-cert']) !== Boolean(values['xds-key'])) fail('--xds-cert and --xds-key go together');
// what provisioned proxies dial: https whenever the server speaks TLS (either: new proxies use it)
const proxyXdsAddress =
  values['proxy-xds-address'] ??
  `${mode === 'plaintext' ? 'http' : 'https'}://gw.${namespace}.svc:${xdsPort}`;

/**
 * The serving certificate for tls and either, and the CA provisioned proxies get: files given, or a
 * certificate for the proxies' address issued at each start by the controller's own CA (a Secret).
 */
async function xdsTls(): Promise<{
  tls?: { certFile: string; keyFile: string } | { cert: string; key: string };
  ca?: string;
}> {
  if (mode === 'plaintext') return {};
  if (values['xds-cert'] && values['xds-key']) {
    const ca = values['xds-ca-file'] ? readFileSync(values['xds-ca-file'], 'utf8') : undefined;
    return { tls: { certFile: values['xds-cert'], keyFile: values['xds-key'] }, ...(ca ? { ca } : {}) };
  }
  const secret = values['xds-ca-secret'];
  // the API server may not answer yet (a controller starting with the cluster): try for a while
  const end = Date.now() + 30_000;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5_000)) {
    try {
      const ca = await loadOrCreateCa(kc, namespace, secret, (msg, fields) => log('info', msg, fields));
      const serving = issueServing(ca, servingNames(proxyXdsAddress, values['cluster-domain']));
      return { tls: { cert: serving.certChain, key: serving.key }, ca: ca.cert };
    } catch (err) {
      if (Date.now() > end)
        fail(`cannot read or store the xDS CA in Secret ${namespace}/${secret}: ${String(err)}`);
      log('warn', 'cannot read or store the xDS CA; retrying', {
        secret: `${namespace}/${secret}`,
        err: String(err),
      });
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
const serving = await xdsTls();

const xds = await startXdsServer({
  port: xdsPort,
  host: values['xds-address'],
  mode,
  ...(serving.tls ? { tls: serving.tls } : {}),
  ...(auth === 'true'
    ? {
        authenticate: tokenReviewAuthenticator(connection(kc), {
          ...(values['xds-token-audience'] ? { audiences: [values['xds-token-audience']] } : {}),
        }),
      }
    : {}),
});
xds.on('connect', (p) => log('info', 'proxy connected', { gateway: p.gateway, node: p.node, peer: p.peer }));
xds.on('disconnect', (p) =>
  log('info', 'proxy disconnected', { gateway: p.gateway, node: p.node, reason: p.reason }),
);
xds.on('reject', (r) => log('warn', 'proxy stream refused', { peer: r.peer, reason: r.reason }));
if (auth === 'false')
  log('warn', 'xDS authentication is off (--xds-auth=false): any client can read any Gateway configuration');

const serviceType = values['proxy-service-type'] as 'LoadBalancer' | 'ClusterIP' | 'NodePort';
if (!['LoadBalancer', 'ClusterIP', 'NodePort'].includes(serviceType))
  fail(`--proxy-service-type must be LoadBalancer, ClusterIP or NodePort, got ${serviceType}`);
const proxyImage = values['proxy-image'];
const deploy = proxyImage
  ? {
      image: proxyImage,
      xdsAddress: proxyXdsAddress,
      // a proxy dialling https gets the CA; one dialling plaintext (either mode, an address given) needs none
      ...(serving.ca && proxyXdsAddress.startsWith('https:') ? { xdsCa: serving.ca } : {}),
      ...(values['xds-token-audience'] ? { tokenAudience: values['xds-token-audience'] } : {}),
      serviceType,
    }
  : undefined;

const leaseSeconds = Number(values['leader-lease-seconds']);
if (!Number.isInteger(leaseSeconds) || leaseSeconds < 2)
  fail(
    `--leader-lease-seconds must be a whole number of seconds, at least 2, got ${values['leader-lease-seconds']}`,
  );
const leader = values['leader-elect']
  ? new LeaderElector(kc, {
      namespace: values['leader-election-namespace'] ?? process.env['POD_NAMESPACE'] ?? 'gw-system',
      name: 'gw-controller',
      identity: process.env['POD_NAME'] ?? `${hostname()}-${process.pid}`,
      leaseSeconds,
      log,
    })
  : undefined;

const controller = new Controller({
  kc,
  xds,
  controllerName: values['controller-name'],
  gatewayClassName: values['gateway-class'],
  clusterDomain: values['cluster-domain'],
  modelsEnabled: values['enable-models'],
  inferenceEnabled: values['enable-inference-extension'],
  ...(deploy ? { deploy } : {}),
  ...(leader ? { leader } : {}),
  log,
});

function listen(p: number, handler: Parameters<typeof createServer>[1]): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer(handler);
    s.once('error', reject);
    s.listen(p, () => resolve(s));
  });
}

const health = await listen(port('health-port', values['health-port']), (req, res) => {
  if (req.url === '/healthz') return void res.end('ok\n');
  if (req.url === '/readyz') {
    const waiting = controller.provider.notSynced();
    res.statusCode = waiting.length === 0 ? 200 : 503;
    return void res.end(waiting.length === 0 ? 'ready\n' : `waiting for: ${waiting.join(', ')}\n`);
  }
  res.statusCode = 404;
  res.end();
});

const metrics = await listen(port('metrics-port', values['metrics-port']), (_req, res) => {
  const m = controller.metrics;
  const x = xds.metrics();
  const lines = [
    '# TYPE gw_controller_translations_total counter',
    `gw_controller_translations_total ${m.translations}`,
    '# TYPE gw_controller_translate_seconds gauge',
    `gw_controller_translate_seconds ${(m.lastTranslateMs / 1000).toFixed(6)}`,
    '# TYPE gw_controller_status_writes_total counter',
    `gw_controller_status_writes_total ${m.statusWrites}`,
    '# TYPE gw_controller_status_write_errors_total counter',
    `gw_controller_status_write_errors_total ${m.statusWriteErrors}`,
    '# TYPE gw_controller_xds_nacks_total counter',
    `gw_controller_xds_nacks_total ${x.nacksTotal}`,
    '# TYPE gw_controller_xds_acks_total counter',
    `gw_controller_xds_acks_total ${x.acksTotal}`,
    '# TYPE gw_controller_xds_rejects_total counter',
    `gw_controller_xds_rejects_total ${x.rejectsTotal}`,
    '# TYPE gw_controller_leader gauge',
    `gw_controller_leader ${!leader || leader.leading ? 1 : 0}`,
    '# TYPE gw_controller_xds_connected_proxies gauge',
    ...Object.entries(x.connected).map(
      ([g, n]) => `gw_controller_xds_connected_proxies{gateway="${g}"} ${n}`,
    ),
  ];
  res.setHeader('content-type', 'text/plain; version=0.0.4');
  res.end(`${lines.join('\n')}\n${processMetricsText('gw_controller', VERSION)}`);
});

await controller.start();
leader?.start();
log('info', 'gw-controller started', {
  xds: `${values['xds-address']}:${xds.port}`,
  mode,
  health: values['health-port'],
  metrics: values['metrics-port'],
});

/** How long a graceful stop may take before the controller exits anyway. */
const SHUTDOWN_DEADLINE_MS = 10_000;
let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log('info', 'stopping', { signal });
  // A step that cannot finish (an API server that stopped answering) must not keep the pod in
  // Terminating until the kubelet's SIGKILL: past the deadline the controller says where it was and exits.
  let step = 'stopping the reconciler';
  setTimeout(() => {
    log('error', `stopping took over ${SHUTDOWN_DEADLINE_MS / 1000}s; exiting`, { step });
    process.exit(1);
  }, SHUTDOWN_DEADLINE_MS).unref();
  await controller.stop();
  step = 'closing the xDS server';
  await xds.close();
  health.close();
  metrics.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
