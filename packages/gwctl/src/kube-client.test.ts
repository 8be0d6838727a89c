import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '@gw/testkit/temp-dir';
import { ApiException } from '@kubernetes/client-node';
import { GwctlError } from './errors.ts';
import { apiError, loadCluster } from './kube-client.ts';

const dir = tempDir('gwctl-kc-');
const emptyHome = tempDir('gwctl-home-');

function kubeconfig(
  file: string,
  o: { server?: string; contexts?: [string, string | undefined][]; current?: string },
): string {
  const path = join(dir, file);
  const contexts = (o.contexts ?? [['main', undefined]])
    .map(
      ([n, ns]) =>
        `- name: ${n}\n  context:\n    cluster: c-${file}\n    user: u-${file}\n${ns ? `    namespace: ${ns}\n` : ''}`,
    )
    .join('');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: c-${file}
  cluster: { server: "${o.server ?? 'https://k8s.example:6443'}" }
users:
- name: u-${file}
  user: { token: x }
contexts:
${contexts}${o.current === undefined ? '' : `current-context: "${o.current}"\n`}`,
  );
  return path;
}

const code = (c: string, re: RegExp) => (e: unknown) =>
  e instanceof GwctlError && e.code === c && re.test(e.message);

test('the current context gives the server and namespace; default namespace otherwise', () => {
  const file = kubeconfig('a', {
    contexts: [
      ['main', 'team'],
      ['bare', undefined],
    ],
    current: 'main',
  });
  const c = loadCluster({ env: { KUBECONFIG: file } });
  assert.deepEqual([c.server, c.context, c.namespace], ['https://k8s.example:6443', 'main', 'team']);
  assert.equal(loadCluster({ env: { KUBECONFIG: file }, context: 'bare' }).namespace, 'default');
  assert.throws(
    () => loadCluster({ env: { KUBECONFIG: file }, context: 'nope' }),
    code('GWCTL_ERR_KUBECONFIG', /context nope is not in .*a \(contexts: main, bare\)/),
  );
});

test('KUBECONFIG lists merge, skip missing files, and the first current-context wins', () => {
  const none = kubeconfig('none', { server: 'https://one:6443', contexts: [['one', undefined]] });
  const two = kubeconfig('two', { server: 'https://two:6443', contexts: [['two', 'ns2']], current: 'two' });
  const three = kubeconfig('three', {
    server: 'https://three:6443',
    contexts: [['three', undefined]],
    current: 'three',
  });
  const list = [join(dir, 'missing'), none, two, three].join(delimiter);
  const c = loadCluster({ env: { KUBECONFIG: list } });
  assert.deepEqual([c.server, c.context, c.namespace], ['https://two:6443', 'two', 'ns2']);
  assert.throws(
    () => loadCluster({ env: { KUBECONFIG: [join(dir, 'x'), join(dir, 'y')].join(delimiter) } }),
    code('GWCTL_ERR_KUBECONFIG', /KUBECONFIG names .*x:.*y, which does not exist \(none of them\)/),
  );
});

test('no current context, a broken file, and no kubeconfig at all are clear errors', () => {
  const noCurrent = kubeconfig('nocurrent', {});
  assert.throws(
    () => loadCluster({ env: { KUBECONFIG: noCurrent } }),
    code('GWCTL_ERR_KUBECONFIG', /nocurrent sets no current context; pass --context/),
  );
  const broken = join(dir, 'broken');
  writeFileSync(broken, 'clusters: [ {');
  assert.throws(
    () => loadCluster({ env: { KUBECONFIG: broken } }),
    code('GWCTL_ERR_KUBECONFIG', /cannot load kubeconfig .*broken: /),
  );
  assert.throws(
    () => loadCluster({ env: { HOME: emptyHome } }),
    code('GWCTL_ERR_KUBECONFIG', /no kubeconfig: KUBECONFIG is not set, .*\.kube\/config does not exist/),
  );
});

test('~/.kube/config is read when KUBECONFIG is unset', () => {
  const home = tempDir('gwctl-home-');
  mkdirSync(join(home, '.kube'));
  writeFileSync(
    join(home, '.kube', 'config'),
    `apiVersion: v1
clusters: [{ name: c, cluster: { server: "https://home:6443" } }]
users: [{ name: u, user: {} }]
contexts: [{ name: h, context: { cluster: c, user: u } }]
current-context: h
`,
  );
  assert.equal(loadCluster({ env: { HOME: home } }).server, 'https://home:6443');
});

test('API failures name the server, the context and the permission', () => {
  const c = loadCluster({ env: { KUBECONFIG: kubeconfig('err', { current: 'main' }) } });
  const action = { verb: 'list', resource: 'pods', namespace: 'prod' };
  const forbidden = apiError(
    c,
    action,
    new ApiException(
      403,
      'Unknown API Status Code!',
      '{"kind":"Status","message":"pods is forbidden: no"}',
      {},
    ),
  );
  assert.equal(forbidden.code, 'GWCTL_ERR_FORBIDDEN');
  assert.equal(
    forbidden.message,
    'forbidden: context main may not list pods in namespace prod (403 from https://k8s.example:6443); ' +
      'the missing RBAC permission is verb "list" on "pods" in namespace prod; the server said: pods is forbidden: no',
  );
  assert.match(
    apiError(c, action, new ApiException(401, 'Unauthorized', undefined, {})).message,
    /rejected the credentials of context main \(401/,
  );
  assert.match(
    apiError(c, action, new ApiException(500, 'x', 'boom', {})).message,
    /answered 500 to list pods in namespace prod; the server said: boom/,
  );
  const refused = new TypeError('fetch failed', {
    cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }),
  });
  assert.equal(
    apiError(c, action, refused).message,
    'cannot reach the API server at https://k8s.example:6443 (context main): ECONNREFUSED',
  );
  const timeout = new DOMException('timed out', 'TimeoutError');
  assert.match(apiError(c, action, timeout).message, /did not answer within 15 s/);
  assert.match(
    apiError(c, action, new Error('exec plugin failed')).message,
    /cannot list pods in namespace prod through .*: exec plugin failed/,
  );
});
