// backendAuth as the IR holds it: key and signing-key files read, secrets sealed, defaults filled
// (RS256, 300s, the Authorization header with a Bearer prefix is left to the policy), and @gw/api's
// checks reported at the config's field paths.
import {
  type BackendAuth,
  checkBackendAuth,
  checkCel,
  checkSigningKey,
  type FieldPath,
  type Problem,
  parseGoDuration,
} from '@gw/api';
import { Secret } from '../secret.ts';
import type { AuthLocationIR, AwsAssumeRoleIR, BackendAuthIR, ExtraCredentialIR } from './ir.ts';
import {
  resolveAzure,
  resolveCrossAppAccess,
  resolveGcp,
  resolveTokenExchange,
  type TokenResolveIO,
} from './token-auth.ts';

export interface ResolveIO extends TokenResolveIO {
  fail(path: FieldPath, message: string): void;
  report(problems: readonly Problem[]): void;
  /** A PEM string as it is, anything else read as a file (relative to the config). */
  readMaterial(path: FieldPath, v: string | { file: string }): string | undefined;
  /** A place the resolved backendAuth writes a credential to (beside the Authorization header). */
  credentialLocation?(loc: AuthLocationIR): void;
}

const DEFAULT_TTL_SECONDS = 300;

type LocationConfig = Extract<BackendAuth, { passthrough: unknown }>['passthrough']['location'];

function location(l: LocationConfig): { location?: AuthLocationIR } {
  // an expression was refused by checkBackendAuth
  if (!l || 'expression' in l) return {};
  return { location: l };
}

type AwsConfig = Extract<BackendAuth, { aws: unknown }>['aws'];
type AssumeRoleConfig = NonNullable<Extract<AwsConfig, { assumeRole?: unknown }>['assumeRole']>;

/** aws.assumeRole as the IR, its expressions checked (problems reported at `at`). */
export function assumeRoleIR(
  r: AssumeRoleConfig,
  at: FieldPath,
  report: (problems: readonly Problem[]) => void,
): AwsAssumeRoleIR {
  if (r.sessionName && typeof r.sessionName === 'object')
    report(checkCel(r.sessionName.expression, [...at, 'sessionName', 'expression']));
  (r.tags ?? []).forEach((t, i) => {
    if (t.expression) report(checkCel(t.expression, [...at, 'tags', i, 'expression']));
  });
  return {
    roleArn: r.roleArn,
    ...(r.sessionName
      ? {
          sessionName:
            typeof r.sessionName === 'string' ? r.sessionName : { expression: r.sessionName.expression },
        }
      : {}),
    tags: (r.tags ?? []).map((t) =>
      t.expression ? { key: t.key, expression: t.expression } : { key: t.key, value: t.value ?? '' },
    ),
    ...(r.externalId ? { externalId: r.externalId } : {}),
  };
}

export function resolveBackendAuth(
  io: ResolveIO,
  path: FieldPath,
  a: BackendAuth,
): BackendAuthIR | undefined {
  const r = resolveAll(io, path, a);
  if (r && io.credentialLocation) for (const loc of writtenAt(r)) io.credentialLocation(loc);
  return r;
}

/** The places `a` writes a credential to that it names (the default, Authorization, is always sensitive). */
function writtenAt(a: BackendAuthIR): AuthLocationIR[] {
  const out = (a.credentials ?? []).map((c) => c.location);
  for (const form of [
    'key' in a ? a.key : undefined,
    'passthrough' in a ? a.passthrough : undefined,
    'jwtSign' in a ? a.jwtSign : undefined,
    'oauthTokenExchange' in a ? a.oauthTokenExchange : undefined,
  ])
    if (form?.location) out.push(form.location);
  return out;
}

function resolveAll(io: ResolveIO, path: FieldPath, a: BackendAuth): BackendAuthIR | undefined {
  const problems = checkBackendAuth(a, path);
  if (problems.length) {
    io.report(problems);
    return undefined;
  }
  if (typeof a !== 'object' || !('credentials' in a) || !a.credentials) return resolveForm(io, path, a);
  const credentials: ExtraCredentialIR[] = [];
  for (const [i, c] of a.credentials.entries()) {
    const kp = [...path, 'credentials', i, 'key'];
    const text = readKey(io, kp, c.key);
    // an expression location was refused by checkBackendAuth
    if (text === undefined || 'expression' in c.location) return undefined;
    credentials.push({ location: c.location, value: new Secret(text) });
  }
  const keys = Object.keys(a).filter((k) => k !== 'credentials');
  if (keys.length === 0) return { credentials };
  const form = resolveForm(io, path, a);
  return form && { ...form, credentials };
}

/** A key inline is the key itself; a {file} is read, its trailing newline dropped. Empty fails. */
function readKey(io: ResolveIO, at: FieldPath, v: string | { file: string }): string | undefined {
  const text = typeof v === 'string' ? v : io.readMaterial([...at, 'file'], v)?.replace(/\r?\n$/, '');
  if (text === '') io.fail(at, 'the key is empty');
  return text || undefined;
}

function resolveForm(io: ResolveIO, path: FieldPath, a: BackendAuth): BackendAuthIR | undefined {
  const before = { failed: false };
  const fail = (p: FieldPath, m: string) => {
    before.failed = true;
    io.fail(p, m);
  };
  // the token forms report through `fail` too, so a failure there drops the form
  const tio: TokenResolveIO = {
    fail,
    readMaterial: (p, v) => io.readMaterial(p, v),
    resolveTls: (p, t) => io.resolveTls(p, t),
    namedEndpoint: (p, name) => io.namedEndpoint(p, name),
    httpService: (p, ref, role) => io.httpService(p, ref, role),
  };
  if (a === 'copilot') return { copilot: true };
  // the schema refuses every other form by name
  if (typeof a !== 'object') return undefined;
  if ('key' in a) {
    const k = a.key;
    const v = typeof k === 'object' && 'value' in k ? k.value : k;
    const kp = [...path, 'key', ...(typeof k === 'object' && 'value' in k ? ['value'] : [])];
    const text = readKey(io, kp, v);
    if (text === undefined) return undefined;
    const loc = typeof k === 'object' && 'value' in k ? location(k.location) : {};
    return { key: { value: new Secret(text), ...loc } };
  }
  if ('passthrough' in a) return { passthrough: location(a.passthrough.location) };
  if ('jwtSign' in a) {
    const j = a.jwtSign;
    const jp = [...path, 'jwtSign'];
    const alg = j.alg ?? 'RS256';
    const pem = io.readMaterial([...jp, 'signingKey'], j.signingKey);
    if (pem === undefined) return undefined;
    const keyProblems = checkSigningKey(pem, alg, [...jp, 'signingKey']);
    if (keyProblems.length) {
      io.report(keyProblems);
      return undefined;
    }
    let ttlSeconds = DEFAULT_TTL_SECONDS;
    if (j.ttl) {
      const ms = parseGoDuration(j.ttl) ?? 0;
      if (ms < 1000) fail([...jp, 'ttl'], 'ttl must be at least 1s');
      ttlSeconds = Math.floor(ms / 1000);
    }
    if (before.failed) return undefined;
    return {
      jwtSign: {
        signingKey: new Secret(pem),
        alg,
        ...(j.kid ? { kid: j.kid } : {}),
        claims: { ...(j.claims ?? {}) },
        ttlSeconds,
        ...location(j.location),
      },
    };
  }
  if ('aws' in a) {
    const w = a.aws;
    const out: Extract<BackendAuthIR, { aws: unknown }>['aws'] = {};
    if ('accessKeyId' in w)
      out.credentials = {
        accessKeyId: w.accessKeyId,
        secretAccessKey: new Secret(w.secretAccessKey),
        ...(w.sessionToken ? { sessionToken: new Secret(w.sessionToken) } : {}),
      };
    if (w.region) out.region = w.region;
    if (w.serviceName) out.service = w.serviceName;
    if ('assumeRole' in w && w.assumeRole)
      out.assumeRole = assumeRoleIR(w.assumeRole, [...path, 'aws', 'assumeRole'], (p) => io.report(p));
    return { aws: out };
  }
  if ('gcp' in a) {
    const g = resolveGcp(tio, [...path, 'gcp'], a.gcp);
    return g && !before.failed ? { gcp: g } : undefined;
  }
  if ('azure' in a) return { azure: resolveAzure(a.azure) };
  if ('oauthTokenExchange' in a) {
    const t = resolveTokenExchange(tio, [...path, 'oauthTokenExchange'], a.oauthTokenExchange);
    return t && !before.failed ? { oauthTokenExchange: t } : undefined;
  }
  if ('crossAppAccess' in a) {
    const x = resolveCrossAppAccess(tio, [...path, 'crossAppAccess'], a.crossAppAccess);
    return x && !before.failed ? { crossAppAccess: x } : undefined;
  }
  return undefined;
}
