import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { makeTestPki } from '@gw/testkit';
import { tempDir } from '@gw/testkit/temp-dir';
import type { Secret } from '../secret.ts';
import { DEFAULT_CONFIG, DEFAULT_CONFIG_NAME } from './default-config.ts';
import { loadConfigFile, loadConfigText } from './load.ts';

const load = (yaml: string, env: Record<string, string> = {}) =>
  loadConfigText('gw.yaml', yaml, process.cwd(), (n) => env[n]);

/** The issues of an invalid config, as `line:col path: message` strings. */
function issues(yaml: string, env: Record<string, string> = {}): string[] {
  try {
    load(yaml, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
  }
  assert.fail('config was accepted');
}

const minimal = (route: string) => `binds:
- port: 8080
  listeners:
  - routes:
${route}`;

describe('errors name the line, column and field path', () => {
  test('YAML syntax error', () => {
    const [i] = issues('binds:\n  - port: 1\n    listeners: [\n');
    assert.match(i as string, /^\d+:\d+ : /);
  });

  test('an alias before its anchor, or a merge of a non-map, is a located error (found by the fuzz test)', () => {
    const [a] = issues('binds:\n- port: 1\n  listeners: *later\n');
    assert.match(a as string, /^3:14 : Unresolved alias .*later/);
    const [b] = issues('binds:\n- <<: 5\n  port: 1\n');
    assert.match(b as string, /^2:3 : Merge sources must be maps/);
  });

  test('unknown field points at the key, and names the field it is likely a misspelling of', () => {
    const got = issues(minimal('    - name: a\n      backendz: []\n      colour: red\n'));
    assert.deepEqual(got, [
      '6:7 binds[0].listeners[0].routes[0].backendz: unknown field "backendz" (did you mean "backends"?)',
      '7:7 binds[0].listeners[0].routes[0].colour: unknown field "colour"',
    ]);
  });

  test('a key no form of a union knows names the forms; a bad value of the right form is all that is said', () => {
    const got = issues(
      minimal(
        '    - name: a\n      matches: [{path: {prefix: /a}}]\n      backends: [{host: "127.0.0.1:9", weight: x}]\n',
      ),
    );
    assert.deepEqual(got, [
      '6:25 binds[0].listeners[0].routes[0].matches[0].path.prefix: unknown field "prefix" (expected one of "exact", "pathPrefix", "regex")',
      '7:48 binds[0].listeners[0].routes[0].backends[0].weight: Invalid input: expected number, received string',
    ]);
  });

  test('a misspelt key of a union of forms picks the form it misspells, without its absence', () => {
    const got = issues(
      minimal(
        '    - name: a\n      matches: [{path: {pathprefix: /a}}]\n      policies: {request_header_modifier: {set: {a: b}}}\n',
      ),
    );
    assert.deepEqual(got, [
      '6:25 binds[0].listeners[0].routes[0].matches[0].path.pathprefix: unknown field "pathprefix" (did you mean "pathPrefix"?)',
      '7:18 binds[0].listeners[0].routes[0].policies.request_header_modifier: unknown field "request_header_modifier" (did you mean "requestHeaderModifier"?)',
    ]);
  });

  test('wrong type says what was expected', () => {
    const got = issues('binds:\n- port: "eighty"\n  listeners: []\n');
    assert.equal(got.length, 1);
    assert.match(got[0] as string, /^2:9 binds\[0\]\.port: .*expected number/i);
  });

  test('a form no union knows: the unknown key and the forms it could be, or the reason all forms give', () => {
    // backendAuth's forms are objects and the string "copilot": the string has nothing to say
    const auth = issues(`binds:
- port: 0
  listeners:
  - routes:
    - backends: [{host: "a:1"}]
      policies:
        backendAuth:
          bearer: {token: k}
`);
    assert.deepEqual(auth, [
      '8:11 binds[0].listeners[0].routes[0].policies.backendAuth.bearer: unknown field "bearer" (expected one of "key", "passthrough", "jwtSign", "aws", "gcp", "azure", "oauthTokenExchange", "oauth", "crossAppAccess", "xaa", "credentials", "headers")',
    ]);
    // every form of extAuthz's protocol is an object
    const protocol = issues(`binds:
- port: 0
  listeners:
  - routes:
    - backends: [{host: "a:1"}]
      policies:
        extAuthz: {host: "authz:9000", protocol: http}
`);
    assert.deepEqual(protocol, [
      '7:50 binds[0].listeners[0].routes[0].policies.extAuthz.protocol: Invalid input: expected object, received string',
    ]);
  });

  test("ipAccessControl: a listener's and its route's add up; addresses and CIDRs are checked", () => {
    const ir = load(`binds:
- port: 0
  listeners:
  - policies:
      ipAccessControl: {deny: ["198.51.100.0/24"], skipPrivateIps: true, maxXffLength: 20}
    routes:
    - name: internal
      policies:
        ipAccessControl: {allow: ["10.0.0.0/8"], deny: ["198.51.100.0/24", "192.0.2.0/24"]}
      backends: [{host: "a:1"}]
    - name: open
      backends: [{host: "a:1"}]
`).ir;
    const [internal, open] = ir.binds[0]?.listeners[0]?.routes ?? [];
    assert.deepEqual(internal?.policies.ipAccessControl, {
      allow: ['10.0.0.0/8'],
      deny: ['198.51.100.0/24', '192.0.2.0/24'],
      maxXffLength: 20,
      skipPrivateIps: true,
    });
    assert.deepEqual(open?.policies.ipAccessControl, {
      deny: ['198.51.100.0/24'],
      skipPrivateIps: true,
      maxXffLength: 20,
    });
    assert.deepEqual(
      issues(`binds:
- port: 0
  listeners:
  - policies:
      ipAccessControl: {allow: ["10.0.0.0/33", "2001:db8::/32", "example.com", "::ffff:10.0.0.0/104"]}
    routes: [{backends: [{host: "a:1"}]}]
`),
      [
        '5:33 binds[0].listeners[0].policies.ipAccessControl.allow[0]: expected an IP address or CIDR such as 10.0.0.0/8 or 2001:db8::/32, got "10.0.0.0/33"',
        '5:65 binds[0].listeners[0].policies.ipAccessControl.allow[2]: expected an IP address or CIDR such as 10.0.0.0/8 or 2001:db8::/32, got "example.com"',
        '5:80 binds[0].listeners[0].policies.ipAccessControl.allow[3]: ::ffff:10.0.0.0/104 is IPv4-mapped: write it as an IPv4 address or CIDR, as client addresses are matched',
      ],
    );
  });

  test('concurrencyLimit: keys and conditions are CEL, checked where they are written', () => {
    const got = issues(`binds:
- port: 0
  listeners:
  - routes:
    - policies:
        concurrencyLimit: [{maxConcurrent: 2, key: "jwt.sub +"}]
      backends: [{host: "a:1"}]
    - policies:
        concurrencyLimit:
          conditional:
          - {condition: "request.headers[", maxConcurrent: 8}
          - {maxConcurrent: 1}
      backends: [{host: "a:1"}]
`);
    assert.equal(got.length, 2, got.join('\n'));
    assert.match(
      got[0] as string,
      /^6:52 binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.concurrencyLimit\[0\]\.key: /,
    );
    assert.match(got[1] as string, /^11:25 .*concurrencyLimit\.conditional\[0\]\.condition: /);
    const zero = issues(`binds:
- port: 0
  listeners:
  - routes:
    - policies: {concurrencyLimit: [{maxConcurrent: 0}]}
      backends: [{host: "a:1"}]
`);
    assert.match(
      zero.join('\n'),
      /^5:53 .*concurrencyLimit\[0\]\.maxConcurrent: .*greater than or equal to 1/,
    );
  });

  test('missing required field names it at the parent', () => {
    const got = issues('binds:\n- port: 8080\n');
    assert.match(got[0] as string, /^2:3 binds\[0\]\.listeners: /);
  });

  test('a backend policy merged from elsewhere is reported where it is written, once', () => {
    // a named backend's, a policy targeting it and the route's apply to both backends of the route
    const got = issues(`backends:
- name: b1
  host: 127.0.0.1:9
  policies:
    backendTLS: {root: {file: /nonexistent/ca.pem}}
policies:
- target: {backend: b1}
  policy:
    backendAuth: {key: {file: /nonexistent/key}}
binds:
- port: 8080
  listeners:
  - routes:
    - policies:
        backendTunnel: {proxy: {backend: nope}}
      backends: [{backend: b1}, {host: "127.0.0.1:10"}]
`);
    assert.deepEqual(got.sort(), [
      '15:42 binds[0].listeners[0].routes[0].policies.backendTunnel.proxy.backend: no backend named "nope" (backends: b1)',
      '5:18 backends[0].policies.backendTLS.root: cannot read /nonexistent/ca.pem: ENOENT',
      '9:31 policies[0].policy.backendAuth.key.file: cannot read /nonexistent/key: ENOENT',
    ]);
    // a listener's, inherited by its routes
    assert.deepEqual(
      issues(`binds:
- port: 8080
  listeners:
  - policies:
      backendTunnel: {proxy: {backend: nope}}
    routes:
    - backends: [{host: "127.0.0.1:10"}]
`),
      ['5:40 binds[0].listeners[0].policies.backendTunnel.proxy.backend: no backend named "nope"'],
    );
    // a gateway's (the spec's form: top-level routes), and a policy targeting a gateway
    assert.deepEqual(
      issues(`gateways:
  default:
    port: 8080
    policies:
      backendTunnel: {proxy: {backend: nope}}
  other:
    port: 8081
policies:
- target: {gateway: other}
  policy:
    backendAuth: {key: {file: /nonexistent/key}}
routes:
- gateways: [default, other]
  backends: [{host: "127.0.0.1:10"}]
`).sort(),
      [
        '11:31 policies[0].policy.backendAuth.key.file: cannot read /nonexistent/key: ENOENT',
        '5:40 gateways.default.policies.backendTunnel.proxy.backend: no backend named "nope"',
      ],
    );
    // a policy targeting the route, and what a routeGroup's routes inherit from the route delegating
    // to them and from its listener
    assert.deepEqual(
      issues(`policies:
- target: {route: r}
  policy:
    backendAuth: {key: {file: /nonexistent/key}}
binds:
- port: 8080
  listeners:
  - policies:
      backendTLS: {root: {file: /nonexistent/ca.pem}}
    routes:
    - name: r
      backends: [{host: "127.0.0.1:10"}]
    - name: d
      matches: [{path: {pathPrefix: /d}}]
      policies:
        backendTunnel: {proxy: {backend: nope}}
      backends: [{routeGroup: g}]
routeGroups:
- name: g
  routes:
  - backends: [{host: "127.0.0.1:11"}, {host: "127.0.0.1:12"}]
`).sort(),
      [
        '16:42 binds[0].listeners[0].routes[1].policies.backendTunnel.proxy.backend: no backend named "nope"',
        '4:31 policies[0].policy.backendAuth.key.file: cannot read /nonexistent/key: ENOENT',
        '9:20 binds[0].listeners[0].policies.backendTLS.root: cannot read /nonexistent/ca.pem: ENOENT',
      ],
    );
  });

  test('several problems are reported at once', () => {
    const got = issues(
      minimal(`    - matches: [{path: {regex: "("}}]
      policies:
        delay: {duration: "not a duration +"}
      backends: [{backend: nope}]
`),
    );
    assert.equal(got.length, 3, got.join('\n'));
    assert.match(got.join('\n'), /path\.regex: invalid regular expression/);
    assert.match(got.join('\n'), /delay\.duration: invalid CEL expression/);
    assert.match(got.join('\n'), /backends\[0\]\.backend: no backend named "nope"/);
  });

  test('bad duration and byte size', () => {
    const got = issues(
      minimal(`    - policies:
        timeout: {requestTimeout: 10 seconds}
        buffer: {request: {maxBytes: 2Pi}}
`),
    );
    assert.match(got.join('\n'), /timeout\.requestTimeout: expected a duration/);
    assert.match(
      got.join('\n'),
      /maxBytes: must be a size in bytes such as 1048576, 512Ki or 2Mi, at most 4Gi/,
    );
  });

  test('invalid config.sensitiveHeaders name fails the load', () => {
    const got = issues(`config:\n  sensitiveHeaders: [x-api-key, "bad header"]\n${minimal('    - {}\n')}`);
    assert.deepEqual(got, ['2:33 config.sensitiveHeaders[1]: invalid HTTP header name "bad header"']);
  });

  test('unsupported sections say so', () => {
    const got = issues(`ui:\n  policies: {}\n${minimal('    - {}\n')}`);
    assert.match(got[0] as string, /^2:3 ui\.policies: ui policies is not supported by this build of gw yet/);
  });

  test('a file that cannot be read names the file', async () => {
    await assert.rejects(loadConfigFile('/nonexistent/gw.yaml'), (err: ConfigError) => {
      assert.match(err.message, /^\/nonexistent\/gw\.yaml: cannot read file/);
      return true;
    });
  });

  test('file errors carry the file name', async () => {
    const dir = tempDir('gw-load-');
    const f = join(dir, 'bad.yaml');
    writeFileSync(f, 'binds:\n- port: 70000\n  listeners: []\n');
    await assert.rejects(loadConfigFile(f), (err: ConfigError) => {
      assert.match(err.message, new RegExp(`^${f}:2:9: binds\\[0\\]\\.port: `));
      return true;
    });
  });

  test('HTTPS without tls, and tls files that do not exist', () => {
    const a = issues('binds:\n- port: 8443\n  listeners:\n  - protocol: HTTPS\n');
    assert.match(a[0] as string, /protocol HTTPS needs tls/);
    const b = issues('binds:\n- port: 8443\n  listeners:\n  - tls: {cert: /no/cert.pem, key: /no/key.pem}\n');
    assert.match(b.join('\n'), /tls\.cert: cannot read \/no\/cert\.pem: ENOENT/);
  });

  test('the files a config reads are listed, so that a change to one reloads it; inline PEM is not a file', async () => {
    const pki = await makeTestPki(['files.test']);
    try {
      const c = pki.servers['files.test']!;
      const dir = tempDir('gw-load-');
      const f = join(dir, 'gw.yaml');
      writeFileSync(
        f,
        `config:
  modelCatalog: [{file: prices.json}]
binds:
- port: 0
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(c.certFile)}, key: ${JSON.stringify(c.keyFile)}}
    routes: [{backends: [{host: "a:1"}]}]
- port: 0
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(c.cert)}, key: ${JSON.stringify(c.keyFile)}}
    routes: [{backends: [{host: "a:1"}]}]
`,
      );
      const loaded = await loadConfigFile(f);
      // prices.json is not there: it is watched all the same, and its prices apply once it is
      assert.deepEqual(new Set(loaded.files), new Set([join(dir, 'prices.json'), c.certFile, c.keyFile]));
    } finally {
      await pki.cleanup();
    }
  });

  test('one port cannot serve HTTP and HTTPS', () => {
    const dir = tempDir('gw-load-');
    const got = issues(`gateways:
  a: {port: 9000}
  b: {port: 9000, protocol: HTTPS, tls: {cert: ${dir}/c.pem, key: ${dir}/k.pem}}
`);
    assert.match(got.join('\n'), /cannot read/);
  });

  test('two binds on one port with the same hostname: the second names where the first is', () => {
    const got = issues(`binds:
- port: 18773
  listeners: [{routes: [{backends: [{host: "127.0.0.1:1"}]}]}]
- port: 18773
  listeners: [{routes: [{backends: [{host: "127.0.0.1:1"}]}]}]
`);
    assert.deepEqual(got, [
      '5:15 binds[1].listeners[0]: listener bind/18773/listener0 has the same hostname (any) on port 18773 as binds[0].listeners[0]',
    ]);
  });

  test("a map key that is not allowed says why, not 'Invalid key in record'", () => {
    const got = issues(`binds:
- port: 18773
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:1"}]
      policies: {requestHeaderModifier: {set: {"bad name": x}}}
`);
    assert.equal(got.length, 1);
    assert.match(
      got[0] ?? '',
      /requestHeaderModifier\.set\["bad name"\]: "bad name" is not a valid key here: it should match '/,
    );
  });

  test('two listeners of one port named alike: their routes could not be told apart', () => {
    const got = issues(`binds:
- port: 18773
  listeners:
  - {name: web, hostname: a.example, routes: [{backends: [{host: "127.0.0.1:1"}]}]}
  - {name: web, hostname: b.example, routes: [{backends: [{host: "127.0.0.1:1"}]}]}
- port: 18773
  listeners: [{hostname: c.example, routes: [{backends: [{host: "127.0.0.1:1"}]}]}]
- port: 18773
  listeners: [{hostname: d.example, routes: [{backends: [{host: "127.0.0.1:1"}]}]}]
`);
    // the unnamed ones (listener0 of each bind) are as they always were
    assert.deepEqual(got, [
      '5:12 binds[0].listeners[1].name: listener name web is used twice on bind/18773 (also binds[0].listeners[0]): names tell listeners, and their routes, apart in logs, metrics and /config_dump',
    ]);
  });

  test('a listen address that is neither an IP address nor a host name', () => {
    const got = issues(`binds:
- port: 18773
  address: 999.1.1.1
  listeners: [{routes: [{backends: [{host: "127.0.0.1:1"}]}]}]
- port: 18774
  address: localhost
  listeners: [{routes: [{backends: [{host: "127.0.0.1:1"}]}]}]
- port: 18775
  address: "::1"
  listeners: [{routes: [{backends: [{host: "127.0.0.1:1"}]}]}]
gateways:
  g: {port: 18776, address: "bad host"}
`);
    assert.deepEqual(got, [
      '3:12 binds[0].address: "999.1.1.1" is not an IP address or a host name to listen on',
      '12:29 gateways.g.address: "bad host" is not an IP address or a host name to listen on',
    ]);
  });

  test('routes attached to an unknown gateway', () => {
    const got = issues(
      'gateways:\n  web: {port: 8080}\nroutes:\n- gateways: api\n  backends: [{host: "a:1"}]\n',
    );
    assert.deepEqual(got, ['4:13 routes[0].gateways: no gateway named "api" (gateways: web)']);
  });
});

describe('environment expansion', () => {
  test('$VAR and ${VAR:-default} expand; numbers stay numbers', () => {
    const { ir } = load(
      'binds:\n- port: $PORT\n  listeners:\n  - routes:\n    - backends: [{host: "${HOST:-localhost}:9"}]\n',
      { PORT: '8123' },
    );
    assert.equal(ir.binds[0]?.port, 8123);
    assert.deepEqual(ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target, {
      kind: 'host',
      host: 'localhost',
      port: 9,
      // a backend named by DNS name sends its name as Host
      rewriteHost: true,
    });
  });

  test('an unset ${VAR} is an error at its position; $$ is a literal $', () => {
    assert.deepEqual(issues('binds:\n- port: ${NOPE}\n  listeners: [{}]\n'), [
      '2:9 binds[0].port: environment variable $NOPE is not set (use ${NAME:-default} for a default, $$ for a literal $)',
    ]);
    const { ir } = load(minimal('    - policies: {directResponse: {status: 200, body: "cost: $$5"}}\n'));
    assert.equal(
      (ir.binds[0]?.listeners[0]?.routes[0]?.policies.directResponse as { body?: string } | undefined)?.body,
      'cost: $5',
    );
  });

  test('a policy on <namespace>/<route>/<rule> applies to that rule only, over one on the route', () => {
    const { ir } = load(`binds:
- port: 0
  listeners:
  - routes:
    - {name: api, namespace: default, ruleName: read, matches: [{path: {pathPrefix: /r}}], backends: [{host: "127.0.0.1:9"}]}
    - {name: api, namespace: default, ruleName: write, matches: [{path: {pathPrefix: /w}}], backends: [{host: "127.0.0.1:9"}]}
policies:
- {target: {route: default/api}, policy: {directResponse: {status: 200, body: route}}}
- {target: {route: default/api/read}, policy: {directResponse: {status: 200, body: rule}}}
`);
    const bodies = ir.binds[0]?.listeners[0]?.routes.map(
      (r) => (r.policies.directResponse as { body?: string } | undefined)?.body,
    );
    assert.deepEqual(bodies, ['rule', 'route']);
  });

  test('password hashes and unset bare $NAMES are left as written', () => {
    const { ir } = load(
      minimal(
        '    - policies: {directResponse: {status: 200, body: "$apr1$UVxm2AQH$uSUK. $2y$05$Heb $UNSET_BARE"}}\n',
      ),
    );
    assert.equal(
      (ir.binds[0]?.listeners[0]?.routes[0]?.policies.directResponse as { body?: string } | undefined)?.body,
      '$apr1$UVxm2AQH$uSUK. $2y$05$Heb $UNSET_BARE',
    );
  });

  test('an unset bare $VAR in a credential is an error naming line, column, field and variable', () => {
    const route = (policies: string) =>
      minimal(`    - policies: ${policies}\n      backends: [{host: "a:1"}]\n`);
    assert.deepEqual(issues(route('{apiKey: {keys: [$NOPE_KEY]}}')), [
      '5:34 binds[0].listeners[0].routes[0].policies.apiKey.keys[0]: environment variable $NOPE_KEY is not set; a credential is never taken as written (use ${NAME:-default} for a default, $$ for a literal $)',
    ]);
    const cases: [string, RegExp][] = [
      [
        '{apiKey: {keys: {ops: {key: "$NOPE_KEY"}}}}',
        /apiKey\.keys\.ops\.key: environment variable \$NOPE_KEY/,
      ],
      ['{apiKey: {keys: {ops: "k-$NOPE_KEY"}}}', /apiKey\.keys\.ops: environment variable \$NOPE_KEY/],
      ['{basicAuth: {users: ["$NOPE_USER"]}}', /basicAuth\.users\[0\]: environment variable \$NOPE_USER/],
      ['{basicAuth: {htpasswd: $NOPE_FILE}}', /basicAuth\.htpasswd: environment variable \$NOPE_FILE/],
      [
        '{requestHeaderModifier: {set: {Authorization: "Bearer $NOPE_TOKEN"}}}',
        /requestHeaderModifier\.set\.Authorization: environment variable \$NOPE_TOKEN/,
      ],
      [
        '{backendTLS: {cert: "-----BEGIN CERTIFICATE-----", key: {file: $NOPE_PEM}}}',
        /backendTLS\.key\.file: environment variable \$NOPE_PEM/,
      ],
    ];
    for (const [policies, want] of cases) {
      const got = issues(route(policies));
      assert.equal(got.length, 1, got.join('\n'));
      assert.match(got[0] as string, want);
      assert.match(got[0] as string, /a credential is never taken as written/);
    }
    // The whole message names the file, as `gw` prints it.
    assert.throws(
      () => load(route('{apiKey: {keys: [$NOPE_KEY]}}')),
      (err: ConfigError) => {
        assert.match(
          err.message,
          /^gw\.yaml:5:34: binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.apiKey\.keys\[0\]: .*\$NOPE_KEY/,
        );
        return true;
      },
    );
  });

  test('llm: a provider key is a credential (an unset $VAR is an error) and a Secret in the IR', () => {
    const llm = (key: string) =>
      `llm:\n  port: 0\n  models:\n  - {name: m, provider: openai, params: {apiKey: ${key}}}\n`;
    assert.deepEqual(issues(llm('$NOPE_KEY')), [
      '4:50 llm.models[0].params.apiKey: environment variable $NOPE_KEY is not set; a credential is never taken as written (use ${NAME:-default} for a default, $$ for a literal $)',
    ]);
    const { ir } = load(llm('$REAL_KEY'), { REAL_KEY: 'sk-env' });
    const target = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    assert.ok(target?.kind === 'ai');
    const key = target.models[0]?.provider.apiKey;
    assert.equal(key?.reveal(), 'sk-env');
    assert.equal(
      JSON.stringify(target.models[0]?.provider),
      '{"name":"openai","apiKey":"[redacted]","kind":"openai","settings":{}}',
    );
  });

  test("llm tls: on the API's own port, 4000 without one; refused where a gateway's listener serves it", async () => {
    const pki = await makeTestPki(['llm.test']);
    try {
      const c = pki.servers['llm.test']!;
      const tls = `  tls: {cert: ${JSON.stringify(c.certFile)}, key: ${JSON.stringify(c.keyFile)}}\n`;
      const models = '  models:\n  - {name: m, provider: openai}\n';
      // agentgateway serves this on port 4000 over TLS
      const bind = load(`llm:\n${tls}${models}`).ir.binds[0];
      assert.deepEqual([bind?.port, bind?.listeners[0]?.protocol], [4000, 'HTTPS']);
      assert.ok(bind?.listeners[0]?.tls, 'the listener has the certificate');
      assert.deepEqual(issues(`gateways: {default: {port: 0}}\nllm:\n${tls}${models}`), [
        "3:3 llm.tls: tls applies to the block's own port: on the gateway named default, its listeners' tls applies (set port for a port of its own)",
      ]);
      assert.deepEqual(issues(`gateways: {g: {port: 0}}\nllm:\n  gateways: [g]\n${tls}${models}`), [
        "4:3 llm.tls: tls applies to the LLM API's own port: on gateways, their listeners' tls applies",
      ]);
    } finally {
      await pki.cleanup();
    }
  });

  test('llm: the API on its own port, or on the default gateway; matches, names and what is missing', () => {
    const models = '  models:\n  - {name: "openai/*", provider: openai}\n';
    const own = load(`llm:\n  port: 0\n${models}`).ir;
    const route = own.binds[0]?.listeners[0]?.routes[0];
    assert.equal(route?.key, 'llm/llm/llm');
    assert.deepEqual(route?.matches, [
      { path: { exact: '/v1/chat/completions' } },
      { path: { exact: '/v1/responses' } },
      { path: { exact: '/v1/embeddings' } },
      { path: { exact: '/v1/messages' } },
      { path: { exact: '/v1/messages/count_tokens' } },
      { path: { exact: '/v1/models' } },
      // the APIs whose path names the model: under Google's roots, and by pattern under any prefix
      { path: { pathPrefix: '/v1beta/models/' } },
      { path: { pathPrefix: '/v1/models/' } },
      { path: { pathPrefix: '/v1/projects/' } },
      { path: { regex: '.*/publishers/anthropic/models/[^/:]+:(rawPredict|streamRawPredict)' } },
      { path: { regex: '.*/models/[^/:]+:(generateContent|streamGenerateContent)' } },
      { path: { regex: '.*/models/[^/:]+:countTokens' } },
    ]);
    const onDefault = load(`gateways: {default: {port: 0}}\nllm:\n${models}`).ir;
    assert.equal(onDefault.binds[0]?.listeners[0]?.routes[0]?.key, 'default/default/llm');
    // neither a port nor gateways, and no gateway named default: agentgateway's port 4000
    const defaulted = load(`llm:\n${models}`);
    assert.deepEqual(
      defaulted.warnings.map((w) => w.message),
      [
        "llm serves on port 4000 of every address (agentgateway's default): set llm.port or llm.gateways to choose",
      ],
    );
    const byDefault = defaulted.ir.binds[0];
    assert.deepEqual([byDefault?.address, byDefault?.port], ['::', 4000]);
    assert.equal(byDefault?.listeners[0]?.routes[0]?.key, 'llm/llm/llm');
    assert.deepEqual(
      issues(
        `llm:\n  port: 0\n  models:\n  - {name: c, provider: {custom: {formats: [{type: realtime}]}}, params: {baseUrl: "http://h:1"}}\n  - {name: a, provider: azure}\n`,
      ),
      [
        '5:5 llm.models[1].params: the azure provider needs params.azureResourceName (or baseUrl / hostOverride) (missing field "params")',
        '4:52 llm.models[0].provider.custom.formats[0].type: format realtime is not supported by this build of gw yet',
      ],
    );
  });

  test('llm.guardrails: a model names a set, and a name that is not one is refused at the model', () => {
    const guard = '{request: [{regex: {action: reject, rules: [{builtin: email}]}}]}';
    const ir = load(
      `llm:\n  port: 0\n  guardrails: {pii: ${guard}}\n  models:\n  - {name: m, provider: openai, guardrails: pii}\n`,
    ).ir;
    const t = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    assert.ok(t?.kind === 'ai');
    assert.ok(t.models[0]?.guards, 'the named set guards the model');
    assert.deepEqual(
      issues(
        `llm:\n  port: 0\n  guardrails: {pii: ${guard}}\n  models:\n  - {name: m, provider: openai, guardrails: nope}\n`,
      ),
      ['5:45 llm.models[0].guardrails: no guardrails named "nope" in llm.guardrails (there are pii)'],
    );
  });

  test('a set bare $VAR in a credential is used; API key metadata is not a credential', () => {
    const { ir, warnings } = load(
      minimal('    - policies: {apiKey: {keys: [{key: $REAL_KEY, metadata: {note: $NOPE_NOTE}}]}}\n'),
      { REAL_KEY: 'k-from-env' },
    );
    const keys = ir.binds[0]?.listeners[0]?.routes[0]?.policies.apiKey?.keys as {
      key: Secret;
      metadata: unknown;
    }[];
    assert.equal(keys[0]?.key.reveal(), 'k-from-env');
    assert.deepEqual(keys[0]?.metadata, { note: '$NOPE_NOTE' });
    assert.equal(warnings.length, 1);
  });

  test('an unset bare $VAR elsewhere is kept as written, with a warning naming file, line and field', () => {
    const { ir, warnings } = load(
      minimal('    - policies: {directResponse: {status: 200, body: "costs $NOPE_PRICE"}}\n'),
    );
    assert.equal(
      (ir.binds[0]?.listeners[0]?.routes[0]?.policies.directResponse as { body?: string } | undefined)?.body,
      'costs $NOPE_PRICE',
    );
    assert.deepEqual(
      warnings.map((w) => `${w.file}:${w.line}:${w.column} ${w.path}: ${w.message}`),
      [
        'gw.yaml:5:54 binds[0].listeners[0].routes[0].policies.directResponse.body: environment variable $NOPE_PRICE is not set, so it is kept as written (write $$ for a literal $, ${NAME:-} for empty)',
      ],
    );
    assert.deepEqual(load(minimal('    - {}\n')).warnings, []);
  });

  test('crypt hashes whose salt starts with capitals are not read as variables', () => {
    // `$2y$05$ABCD/…` reads like a bare $ABCD followed by "/"; it must stay a hash even when ABCD is set.
    const line = 'alice:$2y$05$ABCD/efghijklmnopqrstuleOuHu3XlC0x.F0NfoIpoF26vM7WFGK';
    const { ir, warnings } = load(minimal(`    - policies: {basicAuth: {users: ["${line}"]}}\n`), {
      ABCD: 'replaced',
    });
    assert.equal(ir.binds[0]?.listeners[0]?.routes[0]?.policies.basicAuth?.users?.[0]?.reveal(), line);
    assert.deepEqual(warnings, []);
  });

  test('an environment error does not hide other problems: all are reported at once', () => {
    const got = issues(
      `binds:
- port: \${NOPE_PORT}
  listeners:
  - routes:
    - matches: [{path: {regex: "("}}]
      policies: {apiKey: {keys: [$NOPE_KEY]}}
      backends: [{host: "a:1"}]
`,
    );
    assert.equal(got.length, 3, got.join('\n'));
    assert.match(got[0] as string, /^2:9 binds\[0\]\.port: environment variable \$NOPE_PORT is not set/);
    assert.match(got[1] as string, /^6:34 .*apiKey\.keys\[0\]: environment variable \$NOPE_KEY is not set/);
    assert.match(got[2] as string, /^5:\d+ .*matches\[0\]\.path\.regex: invalid regular expression/);
    // A schema problem elsewhere is reported with the environment error too.
    const schema = issues('binds:\n- port: $NOPE_PORT\n  listeners: []\n  extra: 1\n');
    assert.equal(schema.length, 2, schema.join('\n'));
    assert.match(schema.join('\n'), /binds\[0\]\.extra: unknown field/);
  });

  test('regex anchors with $ are left alone', () => {
    const { ir } = load(minimal('    - matches: [{path: {regex: "^/v[0-9]+$"}}]\n'));
    assert.deepEqual(ir.binds[0]?.listeners[0]?.routes[0]?.matches[0]?.path, { regex: '^/v[0-9]+$' });
  });
});

describe('shapes', () => {
  test('the simple form: gateways.<name> and routes attached by name (default gateway "default")', () => {
    const { ir } = load(`gateways:
  default: {port: 3000}
  admin: {port: 3001, listeners: [{name: a, hostname: admin.local}, {name: b}]}
routes:
- name: web
  backends: [{host: "127.0.0.1:8080"}]
- name: ops
  gateways: admin/a
  backends: [{host: "127.0.0.1:8081"}]
`);
    const byPort = Object.fromEntries(ir.binds.map((b) => [b.port, b]));
    assert.equal(byPort[3000]?.listeners[0]?.routes[0]?.key, 'default/default/web');
    assert.deepEqual(
      byPort[3001]?.listeners.map((l) => [l.name, l.hostname, l.routes.map((r) => r.name)]),
      [
        ['a', 'admin.local', ['ops']],
        ['b', undefined, []],
      ],
    );
  });

  test('policies merge gateway → listener → route, most specific field wins', () => {
    const { ir } = load(`gateways:
  default:
    port: 3000
    policies:
      cors: {allowOrigins: ["*"]}
      timeout: {requestTimeout: 30s}
policies:
- target: {route: r1}
  policy: {timeout: {requestTimeout: 5s}, csrf: {}}
routes:
- name: r1
  policies: {csrf: {additionalOrigins: ["https://a.example"]}}
  backends: [{host: "127.0.0.1:1"}]
`);
    const p = ir.binds[0]?.listeners[0]?.routes[0]?.policies;
    assert.deepEqual(p, {
      cors: { allowOrigins: ['*'] },
      timeout: { requestTimeout: '5s' },
      csrf: { additionalOrigins: ['https://a.example'] },
    });
  });

  test('named backends and backend policies resolve; inline policies win', () => {
    const { ir } = load(`backends:
- name: api
  host: 10.0.0.1:8080
  policies: {requestHeaderModifier: {set: {x-a: named}}, http: {requestTimeout: 2s}}
binds:
- port: 1
  listeners:
  - routes:
    - backends:
      - backend: api
        weight: 3
        policies: {requestHeaderModifier: {set: {x-a: inline}}}
`);
    const b = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0];
    assert.equal(b?.weight, 3);
    assert.deepEqual(b?.target, { kind: 'host', host: '10.0.0.1', port: 8080 });
    assert.deepEqual(b?.policies, {
      requestHeaderModifier: { set: { 'x-a': 'inline' } },
      http: { requestTimeout: '2s' },
    });
  });

  test('equal configs have equal versions; any change makes a new one', () => {
    const a = load(minimal('    - backends: [{host: "a:1"}]\n')).ir.version;
    const b = load(minimal('    - backends: [{host: "a:1"}]\n')).ir.version;
    const c = load(minimal('    - backends: [{host: "a:2"}]\n')).ir.version;
    assert.equal(a, b);
    assert.notEqual(a, c);
    // a rotated secret alone (printed [redacted] everywhere) is a change too, so a reload applies it
    const keyed = (key: string) =>
      load(minimal(`    - backends: [{host: "a:1"}]\n      policies: {apiKey: {keys: [${key}]}}\n`)).ir
        .version;
    assert.equal(keyed('k-1'), keyed('k-1'));
    assert.notEqual(keyed('k-1'), keyed('k-2'));
  });

  test('the embedded default config loads', () => {
    const { ir, startup } = loadConfigText(
      DEFAULT_CONFIG_NAME,
      DEFAULT_CONFIG,
      process.cwd(),
      () => undefined,
    );
    assert.equal(startup.adminAddr, '127.0.0.1:15000');
    assert.equal(ir.binds[0]?.port, 3000);
    assert.equal(ir.binds[0]?.address, '127.0.0.1');
  });
});
