// The deployer's strategic merge patch (packages/controller/src/deployer/strategic-merge.ts) against
// the API server's own: each overlay is applied by our code to the stored object, and by the API server
// as a server-side dry-run `kubectl patch --type=strategic` of the same object. Our result goes
// through the API server too (a dry-run replace), so both get the same defaults; the two must be equal.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type KubeHarness, startKube } from '@gw/testkit';
import { renderProxy } from '../packages/controller/src/deployer/render.ts';
import { strategicMerge } from '../packages/controller/src/deployer/strategic-merge.ts';

let kube: KubeHarness;
type Obj = Record<string, unknown>;

async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await kube.kubectl(args, input === undefined ? {} : { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const gateway = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'edge', namespace: 'default', uid: '00000000-0000-0000-0000-000000000001' },
};

before(async () => {
  kube = await startKube();
  const objects = renderProxy(
    gateway,
    [
      { port: 8080, protocol: 'HTTP' },
      { port: 8443, protocol: 'HTTPS' },
    ],
    {
      image: 'gw:1',
      xdsAddress: 'http://gw.gw-system.svc:9978',
      tokenAudience: 'gw-xds',
    },
  );
  for (const o of objects) {
    // no owner (the Gateway does not exist here), and extra elements for the patches to work on
    const { ownerReferences: _o, ...metadata } = o.metadata as Obj;
    await kubectl(
      ['create', '-f', '-'],
      JSON.stringify({ ...o, metadata: { ...metadata, annotations: { keep: 'me', drop: 'me' } } }),
    );
  }
});

after(async () => {
  await kube?.stop();
});

const cases: { kind: string; name: string; patch: Obj }[] = [
  {
    kind: 'Deployment',
    name: 'maps merge; null deletes a key',
    patch: {
      metadata: { labels: { team: 'a' }, annotations: { drop: null } },
      spec: { replicas: 3, template: { spec: { terminationGracePeriodSeconds: 60 } } },
    },
  },
  {
    kind: 'Deployment',
    name: 'containers merge by name: env added, resources set',
    patch: {
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'gw',
                env: [{ name: 'GW_LOG', value: 'debug' }],
                resources: { limits: { memory: '512Mi' } },
              },
            ],
          },
        },
      },
    },
  },
  {
    kind: 'Deployment',
    name: 'a new container and a new volume are appended',
    patch: {
      spec: {
        template: {
          spec: {
            containers: [{ name: 'sidecar', image: 'busybox:1' }],
            volumes: [{ name: 'scratch', emptyDir: {} }],
          },
        },
      },
    },
  },
  {
    kind: 'Deployment',
    name: '$patch: delete removes an env var and a container port by key',
    patch: {
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'gw',
                env: [{ name: 'POD_NAME', $patch: 'delete' }],
                ports: [{ containerPort: 8443, $patch: 'delete' }],
              },
            ],
          },
        },
      },
    },
  },
  {
    kind: 'Deployment',
    name: '$patch: replace on a map replaces it whole',
    patch: {
      spec: {
        template: {
          spec: {
            containers: [{ name: 'gw', readinessProbe: { $patch: 'replace', tcpSocket: { port: 15021 } } }],
          },
        },
      },
    },
  },
  {
    kind: 'Deployment',
    name: '$patch: replace in a list makes the rest the list',
    patch: {
      spec: {
        template: {
          spec: { containers: [{ name: 'gw', env: [{ $patch: 'replace' }, { name: 'ONLY', value: '1' }] }] },
        },
      },
    },
  },
  {
    kind: 'Deployment',
    name: 'a list without a merge key (args) is replaced; tolerations too',
    patch: {
      spec: {
        template: {
          spec: {
            containers: [{ name: 'gw', args: ['--x'] }],
            tolerations: [{ key: 'k', operator: 'Exists' }],
          },
        },
      },
    },
  },
  {
    kind: 'Deployment',
    name: '$patch: delete on a map empties it',
    patch: {
      spec: {
        strategy: { $patch: 'delete' },
        template: {
          metadata: { labels: { $patch: 'replace', 'gateway.networking.k8s.io/gateway-name': 'edge' } },
        },
      },
    },
  },
  {
    kind: 'Service',
    name: 'Service ports merge by port; a field and annotations set',
    patch: {
      metadata: { annotations: { 'lb.example/internal': 'true' } },
      spec: {
        type: 'ClusterIP',
        ports: [
          { port: 8080, name: 'web' },
          { port: 9000, targetPort: 9000, protocol: 'TCP', name: 'extra' },
        ],
      },
    },
  },
  {
    kind: 'Service',
    name: 'a Service port deleted by key',
    patch: { spec: { ports: [{ port: 8443, $patch: 'delete' }] } },
  },
  {
    kind: 'ServiceAccount',
    name: 'ServiceAccount labels and imagePullSecrets',
    patch: { metadata: { labels: { a: 'b' } }, imagePullSecrets: [{ name: 'regcred' }] },
  },
];

for (const c of cases) {
  test(`${c.kind}: ${c.name}`, async () => {
    const original = JSON.parse(await kubectl(['get', c.kind.toLowerCase(), 'edge', '-o', 'json'])) as Obj;
    const theirs = JSON.parse(
      await kubectl([
        'patch',
        c.kind.toLowerCase(),
        'edge',
        '--type=strategic',
        '--dry-run=server',
        '-o',
        'json',
        '-p',
        JSON.stringify(c.patch),
      ]),
    ) as Obj;
    const merged = strategicMerge(c.kind, original, c.patch);
    const ours = JSON.parse(
      await kubectl(['replace', '--dry-run=server', '-o', 'json', '-f', '-'], JSON.stringify(merged)),
    ) as Obj;
    // written at different moments: the server's bookkeeping differs
    for (const o of [ours, theirs]) {
      const m = o.metadata as Obj;
      delete m.managedFields;
      delete m.generation;
    }
    assert.deepEqual(ours, theirs);
  });
}
