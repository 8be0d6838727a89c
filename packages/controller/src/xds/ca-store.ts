// Where the xDS CA lives so every controller replica (and the next start) serves with the same one: a
// Secret in the controller's namespace with `ca.crt` and `ca.key`. The chart creates it empty (so
// `helm uninstall` removes it); the first replica to find it empty fills it, and a replica that loses
// that race (409 Conflict on the resourceVersion it read) takes the winner's. Without the chart the
// Secret is created.
import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { type CertificateAuthority, generateCa } from './ca.ts';

export const CA_CERT_KEY = 'ca.crt';
export const CA_KEY_KEY = 'ca.key';

const codeOf = (err: unknown) => (err as { code?: number }).code;

function caOf(s: V1Secret): CertificateAuthority | undefined {
  const cert = s.data?.[CA_CERT_KEY];
  const key = s.data?.[CA_KEY_KEY];
  if (!cert || !key) return undefined;
  return { cert: Buffer.from(cert, 'base64').toString(), key: Buffer.from(key, 'base64').toString() };
}

const dataOf = (ca: CertificateAuthority) => ({
  [CA_CERT_KEY]: Buffer.from(ca.cert).toString('base64'),
  [CA_KEY_KEY]: Buffer.from(ca.key).toString('base64'),
});

/** The CA in Secret `namespace/name`, made (and stored) when the Secret is missing or empty. */
export async function loadOrCreateCa(
  kc: KubeConfig,
  namespace: string,
  name: string,
  log: (msg: string, fields: Record<string, unknown>) => void = () => {},
): Promise<CertificateAuthority> {
  const core = kc.makeApiClient(CoreV1Api);
  for (let attempt = 0; attempt < 5; attempt++) {
    let secret: V1Secret | undefined;
    try {
      secret = await core.readNamespacedSecret({ name, namespace });
    } catch (err) {
      if (codeOf(err) !== 404) throw err;
    }
    const existing = secret && caOf(secret);
    if (existing) return existing;
    const ca = generateCa();
    try {
      if (secret) {
        // resourceVersion kept: a concurrent fill makes this a 409
        await core.replaceNamespacedSecret({ name, namespace, body: { ...secret, data: dataOf(ca) } });
      } else {
        await core.createNamespacedSecret({
          namespace,
          body: {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'gw-controller' } },
            type: 'Opaque',
            data: dataOf(ca),
          },
        });
      }
      log('created the xDS CA', { secret: `${namespace}/${name}` });
      return ca;
    } catch (err) {
      if (codeOf(err) !== 409) throw err;
      // another replica stored its CA first: read it
    }
  }
  throw new Error(`could not store or read the xDS CA in Secret ${namespace}/${name}`);
}
