// Scenario 5: the policy chain on every request: JWT (RS256, inline JWKS) + CEL authorization + local
// rate limit, on scenario 1's route, upstream and load plus an Authorization header. Peers: direct, gw
// with the chain, gw plain (scenario 1's config, the baseline that prices the chain) and nginx as a plain
// proxy (it has no JWT validation: it is the floor of proxying, not a like-for-like policy peer).
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { agentgatewayConfig } from '../lib/agentgateway.ts';
import { gwConfig } from '../lib/gw.ts';
import { runProxyComparison } from '../lib/proxy-comparison.ts';
import { configure as configurePlain, plainHttp } from './plain-http.ts';
import type { ConfigureInput, Scenario, ScenarioConfig } from './types.ts';

const ISSUER = 'https://bench.local';
const AUDIENCE = 'bench';
const SUBJECT = 'bench-user';
const KID = 'bench-rs256';

/** The builder of a signed JWT, as far as it is used here. */
interface JwtBuilder {
  setProtectedHeader(header: { alg: string; kid: string }): JwtBuilder;
  setIssuer(iss: string): JwtBuilder;
  setAudience(aud: string): JwtBuilder;
  setIssuedAt(): JwtBuilder;
  setExpirationTime(exp: string): JwtBuilder;
  sign(key: unknown): Promise<string>;
}

/** The slice of jose used here (its types do not resolve from bench/, which has no node_modules). */
interface Jose {
  generateKeyPair(
    alg: 'RS256',
    opts: { extractable: boolean },
  ): Promise<{ privateKey: unknown; publicKey: unknown }>;
  exportJWK(key: unknown): Promise<Record<string, unknown>>;
  SignJWT: new (claims: Record<string, unknown>) => JwtBuilder;
}

/**
 * jose as gw itself uses it: bench/ is not a workspace package, so it is resolved from the proxy
 * package (its exact pinned version, no second copy and no manifest to keep in step), through that
 * package's own require resolution (honouring jose's `exports`), then loaded as ESM.
 */
async function loadJose(): Promise<Jose> {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const entry = createRequire(resolve(root, 'packages/proxy/package.json')).resolve('jose');
  return (await import(pathToFileURL(entry).href)) as Jose;
}

interface KeyMaterial {
  /** `{"keys":[<RS256 public JWK with kid>]}` for the route's inline JWKS. */
  jwks: string;
  /** Valid for the chain: right issuer, audience and kid, sub bench-user, expiring in a day. */
  token: string;
  /** Valid signature and claims but another subject: the CEL rule must deny it. */
  otherSubjectToken: string;
}

let material: KeyMaterial | undefined;

async function makeKeyMaterial(): Promise<KeyMaterial> {
  const jose = await loadJose();
  const { privateKey, publicKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await jose.exportJWK(publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
  const sign = (sub: string): Promise<string> =>
    new jose.SignJWT({ sub })
      .setProtectedHeader({ alg: 'RS256', kid: KID })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      // Far beyond any run (a full run takes minutes), so no request meets an expired token.
      .setExpirationTime('24h')
      .sign(privateKey);
  return {
    jwks: JSON.stringify({ keys: [jwk] }),
    token: await sign(SUBJECT),
    otherSubjectToken: await sign('someone-else'),
  };
}

export function configure(input: ConfigureInput): ScenarioConfig {
  if (material === undefined)
    throw new Error('policy-chain: run() generates the key pair before configure()');
  const { mode, ports } = input;
  const plain = configurePlain(input);
  const bearer = { authorization: `Bearer ${material.token}` };
  return {
    // Same upstream and nginx peer as scenario 1: only gw's route and the request's header differ.
    upstream: plain.upstream,
    nginxHttp: plain.nginxHttp,
    // The JWKS JSON holds no single quote, so it sits in a single-quoted YAML scalar as is.
    gwYaml: gwConfig(
      ports,
      mode.workers,
      `- port: ${ports.gw}
  address: 127.0.0.1
  listeners:
  - name: bench
    protocol: HTTP
    routes:
    - name: upstream
      policies:
        jwtAuth:
          providers:
          - issuer: ${ISSUER}
            audiences: [${AUDIENCE}]
            jwks: {inline: '${material.jwks}'}
        authorization:
          rules: ['jwt.sub == "${SUBJECT}" && request.method == "GET"']
        # Never reached in a run (about 10^9 an hour), but the bucket is taken on every request.
        localRateLimit: [{requests: 1000000000, unit: Hours}]
      backends:
      - host: 127.0.0.1:${ports.upstream}
`,
    ),
    agentgatewayYaml: agentgatewayConfig(
      ports,
      mode.workers,
      // The same chain in agentgateway's words: the JWKS as a plain string, the token required (mode
      // strict, as gw's jwtAuth is), the rate limit as a token bucket as large as gw's.
      `binds:
- port: ${ports.gw}
  listeners:
  - name: bench
    protocol: HTTP
    routes:
    - name: upstream
      policies:
        jwtAuth:
          mode: strict
          providers:
          - issuer: ${ISSUER}
            audiences: [${AUDIENCE}]
            jwks: '${material.jwks}'
        authorization:
          rules: ['jwt.sub == "${SUBJECT}" && request.method == "GET"']
        localRateLimit: [{maxTokens: 1000000000, tokensPerFill: 1000000000, fillInterval: 1h}]
      backends:
      - host: 127.0.0.1:${ports.upstream}
`,
    ),
    // wrk and h2load send the header on every request (to every peer: nginx and direct ignore it).
    load: { ...plain.load, headers: { ...plain.load.headers, ...bearer } },
    gwExpect: [
      { what: 'no token: jwtAuth rejects', headers: {}, status: 401 },
      {
        what: 'valid token, other subject: the CEL rule denies',
        headers: { authorization: `Bearer ${material.otherSubjectToken}` },
        status: 403,
      },
      {
        what: 'valid token: the whole chain passes, the rate limit answers',
        headers: bearer,
        status: 200,
        responseHeader: 'x-ratelimit-remaining',
      },
    ],
  };
}

export const policyChain: Scenario = {
  name: 'policy-chain',
  // BENCH_QUICK=1: one round, so that every scenario fits the quick run's 3 minutes.
  quick: { pairs: 1 },
  title: '5. Policy chain: JWT (RS256) + CEL authorization + local rate limit on every request',
  reference:
    'nginx has no JWT validation: "nginx plain proxy" is the floor of proxying, not a peer with the same ' +
    "work. The cost of the chain is gw + policy chain against gw plain (scenario 1's config), measured in " +
    'the same rounds. agentgateway v1.6.0 published no policy-chain figure (~82 µs CPU per plain request).',
  configure,
  gwBaseline: plainHttp,
  peerLabels: { gw: 'gw + policy chain', gwBaseline: 'gw plain', nginx: 'nginx plain proxy' },
  run: async (ctx) => {
    material ??= await makeKeyMaterial();
    return runProxyComparison(ctx, policyChain);
  },
};
