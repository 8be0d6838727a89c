// basicAuth: HTTP Basic credentials checked against htpasswd entries; a failure answers 401 with
// `WWW-Authenticate: Basic realm="<realm>"` (default realm "Restricted"). Credentials that pass are
// taken off the request before it goes upstream.
import { GwError } from '../../errors.ts';
import {
  type CredentialLocation,
  compileLocation,
  readCredential,
} from '../../pipeline/credential-location.ts';
import type { PolicyDefinition } from '../types.ts';
import { hashers, parseHtpasswd, verifyPassword } from './htpasswd.ts';

const BASIC: CredentialLocation = { header: { name: 'authorization', prefix: 'Basic ' } };
const CACHE_MAX = 1024;

export const basicAuth: PolicyDefinition<'basicAuth'> = {
  name: 'basicAuth',
  build(config) {
    const lines = config.users
      ? config.users.map((u) => u.reveal())
      : (config.htpasswd?.reveal().split('\n') ?? []);
    const users = new Map(parseHtpasswd(lines).entries.map((e) => [e.user, e.hash]));
    // Loaded now, so the first request does not wait for it; a failed load is retried by that request.
    hashers.ready.catch(() => {});
    const optional = config.mode?.toLowerCase() === 'optional';
    const realm = (config.realm ?? 'Restricted').replace(/"/g, '');
    const location = compileLocation(config.location, BASIC);
    const challenge = { 'www-authenticate': `Basic realm="${realm}"` };
    // bcrypt is slow on purpose; remember recent successes so a keep-alive client is not re-hashed.
    const verified = new Map<string, string>();
    return async (ctx, next) => {
      const cred = readCredential(ctx, location);
      if (!cred) {
        if (optional) return next(ctx);
        throw new GwError('GW_ERR_UNAUTHENTICATED', 'authentication required', { headers: challenge });
      }
      const decoded = Buffer.from(cred.value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const user = decoded.slice(0, colon);
      const password = decoded.slice(colon + 1);
      const hash = colon > 0 ? users.get(user) : undefined;
      const ok =
        hash !== undefined && (verified.get(cred.value) === hash || (await verifyPassword(password, hash)));
      if (!ok)
        throw new GwError('GW_ERR_UNAUTHENTICATED', 'invalid username or password', { headers: challenge });
      if (verified.size >= CACHE_MAX) verified.clear();
      verified.set(cred.value, hash);
      ctx.ext.basicUser = user;
      // The password is the gateway's business, not the backend's (as agentgateway, and apiKey here).
      cred.remove(ctx);
      return next(ctx);
    };
  },
};
