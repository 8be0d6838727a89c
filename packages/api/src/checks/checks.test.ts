import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  checkAuthorization,
  checkBackendPolicies,
  checkCel,
  checkExtAuthz,
  checkFrontendPolicies,
  checkJwks,
  checkJwtAuth,
  checkLlm,
  checkRegex,
  checkRouteMatch,
  checkTrafficPolicies,
  inOneLine,
  parseHtpasswd,
} from './index.ts';

const paths = (ps: { path: readonly (string | number)[]; message: string }[]) =>
  ps.map((p) => `${p.path.join('.')}: ${p.message}`);

describe('CEL: the proxy environment, declarations only', () => {
  test('the variables, cidr().containsIP() and random() type-check', () => {
    for (const e of [
      'request.path.startsWith("/a") && jwt.sub == "u"',
      'cidr("10.0.0.0/8").containsIP(source.address)',
      'random() < 0.5',
      'has(extauthz.user) || apiKey.name == "k" || llmRequest.model == "m" || backend.name == "b"',
      'duration("1s")',
      'llmRequest.model.stripPrefix("openai/") == "gpt-4o" && llm.inputTokens > 10',
    ]) {
      assert.deepEqual(checkCel(e, ['x']), [], e);
    }
  });

  test('syntax errors, unknown variables and over-long expressions are problems at the path', () => {
    const [syntax] = checkCel('request.path ==', ['a', 0]);
    assert.deepEqual(syntax?.path, ['a', 0]);
    assert.match(syntax?.message ?? '', /^invalid CEL expression: /);
    assert.match(checkCel('nosuchvar == 1', [])[0]?.message ?? '', /Unknown variable: nosuchvar/);
    assert.match(checkCel(`"${'a'.repeat(16384)}"`, [])[0]?.message ?? '', /longer than 16384/);
  });
});

test('regular expressions compile as JavaScript RegExps', () => {
  assert.deepEqual(checkRegex('^/a+$', ['r']), []);
  assert.match(checkRegex('(', ['r'])[0]?.message ?? '', /^invalid regular expression: /);
  assert.deepEqual(
    paths(
      checkRouteMatch({ path: { regex: ['(', 0] }, headers: [{ name: 'x', value: { regex: '[' } }] }, ['m']),
    ),
    [
      'm.path.regex: invalid regular expression: Invalid regular expression: /(/: Unterminated group',
      'm.headers.0.value.regex: invalid regular expression: Invalid regular expression: /[/: Unterminated character class',
    ],
  );
});

test('JWKS: JSON with a keys list', () => {
  assert.deepEqual(checkJwks('{"keys":[]}', []), []);
  assert.deepEqual(paths(checkJwks('[]', ['j'])), ['j: JWKS must be a JSON object with a "keys" list']);
  assert.deepEqual(paths(checkJwks('null', ['j'])), ['j: JWKS must be a JSON object with a "keys" list']);
  assert.match(checkJwks('{', [])[0]?.message ?? '', /^JWKS is not valid JSON: /);
});

test('htpasswd: supported hashes only, problems by line index', () => {
  const r = parseHtpasswd(['# c', 'alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=', 'bob:plain', 'nocolon', '']);
  assert.deepEqual(r.entries, [{ user: 'alice', hash: '{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=' }]);
  assert.deepEqual(r.problems, [
    {
      index: 2,
      message:
        'user bob: unsupported or plain-text password (use bcrypt, MD5 ($apr1$), SHA-1 or crypt hashes)',
    },
    { index: 3, message: 'expected <user>:<hash>' },
  ]);
});

test('traffic policies: every block at its own path, in field order', () => {
  const got = checkTrafficPolicies(
    {
      delay: { conditional: [{ condition: 'request.path ==', duration: '1s' }] },
      authorization: { rules: ['true', { deny: 'nosuch' }] },
      apiKey: { keys: ['k'], location: { expression: '))' } },
      extAuthz: {
        http: {
          host: 'a:1',
          path: '"/x"',
          allowedRequestHeaders: [':authority'],
          addRequestHeaders: { x: '(' },
        },
      },
      remoteRateLimit: { host: 'r:1', domain: 'd', descriptors: [{ entries: [{ key: 'k', value: '(' }] }] },
      jwtAuth: { issuer: 'i', jwks: { inline: '[]' } },
      basicAuth: { users: ['alice:plain'] },
    },
    ['p'],
  );
  assert.deepEqual(
    got.map((p) => p.path.join('.')),
    [
      'p.delay.conditional.0.condition',
      'p.authorization.rules.1.deny',
      'p.apiKey.location.expression',
      'p.extAuthz.http.addRequestHeaders.x',
      'p.extAuthz.http.allowedRequestHeaders.0',
      'p.remoteRateLimit.descriptors.0.entries.0.value',
      'p.jwtAuth.jwks',
      'p.basicAuth.users.0',
    ],
  );
  assert.equal(got[4]?.message, 'pseudo-header :authority cannot be sent over HTTP');
});

test('authorization, ext_authz gRPC, frontend and backend blocks', () => {
  assert.deepEqual(
    paths(checkAuthorization([{ action: 'Deny', policy: { matchExpressions: ['true', '+'] } }], ['a'])).map(
      (s) => s.split(':')[0],
    ),
    ['a.0.policy.matchExpressions.1'],
  );
  assert.equal(
    checkExtAuthz({ grpc: { host: 'a:1', requestMetadata: { k: '(' } } }, ['e'])[0]?.path.join('.'),
    'e.grpc.requestMetadata.k',
  );
  assert.deepEqual(
    checkFrontendPolicies(
      {
        networkAuthorization: { rules: ['cidr("10.0.0.0/8").containsIP(source.address)'] },
        accessLog: { filter: '(', add: { a: 'request.path', b: ')' } },
      },
      ['f'],
    ).map((p) => p.path.join('.')),
    ['f.accessLog.filter', 'f.accessLog.add.b'],
  );
  assert.deepEqual(
    paths(checkBackendPolicies({ backendTLS: { cert: 'c', insecure: true, subjectAltNames: ['x'] } }, ['b'])),
    [
      'b.backendTLS: cert and key must be set together for mTLS',
      'b.backendTLS: at most one of insecure and subjectAltNames',
    ],
  );
});

test('inOneLine: the CEL code frame becomes line and column', () => {
  const [p] = checkCel('request.path.startsWith(', []);
  assert.equal(
    inOneLine(p?.message ?? ''),
    'invalid CEL expression: Unexpected token: EOF (at line 1, column 25)',
  );
  const [q] = checkCel('true &&\n  nosuch', []);
  assert.equal(
    inOneLine(q?.message ?? ''),
    'invalid CEL expression: Unknown variable: nosuch (at line 2, column 3)',
  );
  assert.equal(inOneLine('a\nb'), 'a b');
});

describe('llm', () => {
  test('CEL, provider references, virtual targets and the conditional fallback rule', () => {
    const problems = checkLlm(
      {
        port: 3000,
        providers: [{ name: 'p', provider: 'openai' }],
        models: [
          { name: 'a', provider: { reference: 'p' }, transformation: { model: 'llmRequest.model.nope(' } },
          { name: 'b', provider: { reference: 'q' } },
          { name: 'c', provider: { custom: { formats: [{ type: 'completions' }] } } },
          { name: 'v/*', provider: 'openai', params: { awsRegion: 'us-east-1', azureApiVersion: 'v1' } },
        ],
        virtualModels: [
          {
            name: 'x',
            routing: {
              conditional: { targets: [{ model: 'a' }, { model: 'v/any', when: 'true' }, { model: 'zz' }] },
            },
          },
        ],
      },
      ['llm'],
    );
    assert.deepEqual(
      paths(problems).map((p) => p.split(' (at')[0]?.split('\n')[0]),
      [
        'llm.models.0.transformation.model: invalid CEL expression: Unexpected token: EOF',
        'llm.models.1.provider.reference: no provider named "q" in llm.providers (providers: p)',
        'llm.models.2.params: a custom provider needs params.baseUrl (or hostOverride): where its endpoint is',
        'llm.models.3.params.awsRegion: awsRegion is for the bedrock provider',
        'llm.models.3.params.azureApiVersion: azureApiVersion is for the azure provider',
        'llm.virtualModels.0.routing.conditional.targets.0.when: only the last target may omit when (it is the fallback)',
        'llm.virtualModels.0.routing.conditional.targets.2.model: no model in llm.models serves "zz"',
      ],
    );
  });
});

test('jwtAuth: audiences or jwtValidationOptions beside providers are named (they would hold for none)', () => {
  const jwks = { inline: '{"keys":[]}' };
  const got = checkJwtAuth(
    {
      providers: [{ issuer: 'https://a.example', jwks }],
      audiences: ['api'],
      jwtValidationOptions: { requiredClaims: ['exp'] },
    } as never,
    ['p'],
  );
  assert.deepEqual(
    got.filter((p) => !p.path.includes('jwks')).map((p) => `${p.path.join('.')}: ${p.message}`),
    [
      'p.audiences: with providers, set audiences on each provider',
      'p.jwtValidationOptions: with providers, set jwtValidationOptions on each provider',
    ],
  );
  assert.deepEqual(
    checkJwtAuth({ providers: [{ issuer: 'https://a.example', jwks, audiences: ['api'] }] } as never, [
      'p',
    ]).filter((p) => !p.path.includes('jwks')),
    [],
  );
});
