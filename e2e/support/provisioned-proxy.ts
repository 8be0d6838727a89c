// The kubelet's part for a proxy Deployment the deployer wrote, on the test API server: its projected
// volume written to a temp dir (a token the API server issues for the pod's service account with the
// volume's audience, ConfigMap keys read from the API server), the container's args pointed there,
// and bin/gw started with them. The admin ports move off the defaults, which other processes hold.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeHarness } from '@gw/testkit';
import { type GwProcess, startGw, tempDir } from './gw-process.ts';

export interface ProvisionedDeployment {
  metadata: { namespace?: string };
  spec: {
    template: {
      spec: {
        serviceAccountName: string;
        containers: { args: string[]; volumeMounts?: { name: string; mountPath: string }[] }[];
        volumes: {
          name: string;
          projected?: {
            sources: {
              serviceAccountToken?: { audience?: string; path: string };
              configMap?: { name: string; items: { key: string; path: string }[] };
            }[];
          };
        }[];
      };
    };
  };
}

async function kubectlOut(kube: KubeHarness, args: string[]): Promise<string> {
  const r = await kube.kubectl(args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** The container's args with each projected volume's mount path replaced by a directory holding its files. */
export async function materializeProxyArgs(kube: KubeHarness, dep: ProvisionedDeployment): Promise<string[]> {
  const pod = dep.spec.template.spec;
  const ns = dep.metadata.namespace ?? 'default';
  const container = pod.containers[0];
  if (!container) throw new Error('the Deployment has no container');
  let args = container.args;
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.volumes.find((v) => v.name === mount.name);
    if (!volume?.projected) continue;
    const dir = tempDir('gw-projected-');
    for (const source of volume.projected.sources) {
      if (source.serviceAccountToken) {
        const audience = source.serviceAccountToken.audience;
        const token = await kubectlOut(kube, [
          'create',
          'token',
          pod.serviceAccountName,
          '--namespace',
          ns,
          ...(audience ? ['--audience', audience] : []),
        ]);
        writeFileSync(join(dir, source.serviceAccountToken.path), token.trim());
      }
      if (source.configMap) {
        const cm = JSON.parse(
          await kubectlOut(kube, [
            'get',
            'configmap',
            source.configMap.name,
            '--namespace',
            ns,
            '-o',
            'json',
          ]),
        ) as { data?: Record<string, string> };
        for (const item of source.configMap.items) {
          const value = cm.data?.[item.key];
          if (value === undefined)
            throw new Error(`ConfigMap ${source.configMap.name} has no key ${item.key}`);
          writeFileSync(join(dir, item.path), value);
        }
      }
    }
    args = args.map((a) => (a.startsWith(`${mount.mountPath}/`) ? dir + a.slice(mount.mountPath.length) : a));
  }
  return args;
}

/** bin/gw as the Deployment's pod would run it (args rewritten by `rewrite`, if given). */
export async function startProvisionedProxy(
  kube: KubeHarness,
  dep: ProvisionedDeployment,
  rewrite: (args: string[]) => string[] = (a) => a,
): Promise<GwProcess> {
  const args = rewrite(await materializeProxyArgs(kube, dep));
  return startGw({
    args: [
      ...args,
      ...['--admin-addr', '127.0.0.1:0', '--stats-addr', '127.0.0.1:0', '--readiness-addr', '127.0.0.1:0'],
    ],
    // Ready only once the controller's first snapshot arrives over xDS: with the whole suite sharing
    // two cores that took over 15 s once (CI).
    timeoutMs: 45_000,
  });
}
