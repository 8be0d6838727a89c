// The oidc policy end to end with real parts: `oidc-provider` as the OpenID provider (discovery,
// authorization code + PKCE, a confidential client, refresh tokens, RP-initiated logout), a browser
// (the testkit's cookie jar following redirects through the provider's login and consent) and a real
// upstream that shows what reached it. Also the failures a user can cause or meet (a tampered cookie,
// a callback that does not match, the provider down) and config mistakes naming their field.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import {
  Browser,
  CLOSED_PORT,
  httpGet,
  type IdentityProvider,
  type SigningJwk,
  startIdentityProvider,
  startUpstream,
  type TestServer,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { loadConfigText } from '../../config/load.ts';

const CLIENT = { clientId: 'gw-web', clientSecret: 'web-secret' };
const accounts = { alice: { groups: ['eng'] }, bob: { groups: ['sales'] } };

let up: TestServer;
let idp: IdentityProvider; // tokens live 5 minutes
let shortIdp: IdentityProvider; // tokens live 3 seconds: sessions need refreshing
let proxy: TestProxy;
let downPort: number;

async function signingKey(kid: string): Promise<SigningJwk> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kty: 'RSA', kid, alg: 'RS256', use: 'sig' };
}

const callback = (prefix: string) => proxy.url(`/${prefix}/oauth/callback`);

function config(issuer: string, shortIssuer: string) {
  const route = (name: string, iss: string, extra = '') => `    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies:
        oidc:
          issuer: "${iss}"
          clientId: ${CLIENT.clientId}
          clientSecret: ${CLIENT.clientSecret}
          redirectURI: "${proxy ? callback(name) : `http://127.0.0.1:1/${name}/oauth/callback`}"
          scopes: [openid, offline_access]
          logout: {path: /${name}/logout}
${extra}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  return `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${route(
  'app',
  issuer,
  `        authorization: {rules: ['"eng" in jwt.groups']}
        transformations: {request: {set: {x-user: jwt.sub}}}
        backendAuth: {passthrough: {}}`,
)}
${route('short', shortIssuer)}
${route('down', `http://127.0.0.1:${downPort}`)}
`;
}

before(async () => {
  up = await startUpstream();
  downPort = CLOSED_PORT;
  // the proxy's port is part of the redirect URIs the provider knows: start it, then point it at them
  proxy = await startProxy(config('http://127.0.0.1:1', 'http://127.0.0.1:1'));
  const key = await signingKey('k1');
  const common = { keys: [key], clients: [], resources: {}, accounts };
  [idp, shortIdp] = await Promise.all([
    startIdentityProvider({ ...common, webClients: [{ ...CLIENT, redirectUris: [callback('app')] }] }),
    startIdentityProvider({
      ...common,
      tokenTTL: 3,
      webClients: [
        { ...CLIENT, redirectUris: [callback('short')], tokenEndpointAuthMethod: 'client_secret_post' },
      ],
    }),
  ]);
  await proxy.reload(config(idp.issuer, shortIdp.issuer));
});

after(async () => {
  await proxy?.close();
  await idp?.close();
  await shortIdp?.close();
  await up?.close();
});

const sessionCookies = (b: Browser) => b.find('127.0.0.1', 'gw_oidc_s_');

/** A browser that has logged in on `path` as `account`; the page it landed on. */
async function loggedIn(path: string, account = 'alice') {
  const browser = new Browser();
  const page = await browser.navigate(proxy.url(path), { account });
  return { browser, page };
}

describe('login', () => {
  test('a page without a session: to the provider with state, nonce and PKCE S256, a login cookie for the callback only', async () => {
    const b = new Browser();
    const r = await b.request(proxy.url('/app/page?x=1'));
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('cache-control'), 'no-store');
    const to = new URL(r.headers.get('location') ?? '');
    assert.equal(`${to.origin}${to.pathname}`, idp.metadata['authorization_endpoint']);
    const q = to.searchParams;
    assert.equal(q.get('response_type'), 'code');
    assert.equal(q.get('client_id'), CLIENT.clientId);
    assert.equal(q.get('redirect_uri'), callback('app'));
    assert.equal(q.get('scope'), 'openid offline_access', 'openid once, first');
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.match(q.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.match(q.get('state') ?? '', /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    assert.match(q.get('nonce') ?? '', /^[A-Za-z0-9_-]{16,}$/);
    const [login] = b.find('127.0.0.1', 'gw_oidc_x_');
    assert.ok(login, 'a login cookie');
    assert.equal(login.path, '/app/oauth/callback');
    assert.ok(login.httpOnly);
    assert.equal(login.sameSite, 'Lax');
    assert.ok(!login.value.includes(q.get('nonce') ?? '-'), 'sealed: the nonce cannot be read from it');
  });

  test('the whole flow: provider login and consent, callback, session cookie, back to the page; the upstream sees the user', async () => {
    const { browser, page } = await loggedIn('/app/page?x=1');
    assert.equal(page.status, 200, page.text);
    assert.equal(page.url, proxy.url('/app/page?x=1'), 'back where the user was going');
    assert.ok(
      page.hops.some((h) => h.startsWith(`${callback('app')}?`)),
      'through the callback',
    );
    assert.ok(
      page.hops.some((h) => h.startsWith(`${idp.issuer}/interaction/`)),
      'through the login page',
    );
    const seen = JSON.parse(page.text) as { url: string; headers: Record<string, string> };
    assert.equal(seen.url, '/app/page?x=1');
    assert.equal(seen.headers['x-user'], 'alice', 'jwt.sub in a transformation');
    const forwarded = decodeJwt((seen.headers['authorization'] ?? '').replace(/^Bearer /, ''));
    assert.equal(forwarded.iss, idp.issuer, 'backendAuth passthrough forwards the ID token');
    assert.equal(forwarded.aud, CLIENT.clientId);
    // (the provider's own cookies are there: a browser keeps cookies per host, not per port)
    assert.doesNotMatch(seen.headers['cookie'] ?? '', /gw_oidc_/, 'the session cookies are not passed on');
    const [session] = sessionCookies(browser);
    assert.ok(session);
    assert.ok(session.httpOnly);
    assert.equal(session.sameSite, 'Lax');
    assert.equal(session.secure, false, 'a plain-HTTP redirectURI gives cookies without Secure');
    assert.equal(session.path, '/');
    assert.equal(browser.find('127.0.0.1', 'gw_oidc_x_').length, 0, 'the login cookie is cleared');

    // the next request is served from the session, without the provider
    browser.store(proxy.url('/'), 'app=1; Path=/');
    const events = proxy.trace();
    const again = await browser.request(proxy.url('/app/other'));
    assert.equal(again.status, 200);
    const seen2 = JSON.parse(again.text) as { headers: Record<string, string> };
    assert.match(
      seen2.headers['cookie'] ?? '',
      /(^|; )app=1($|;)/,
      "the application's own cookies still reach it",
    );
    assert.doesNotMatch(seen2.headers['cookie'] ?? '', /gw_oidc_/);
    const trace = await events;
    const oidc = trace.filter((e) => e.message.type === 'oidc').map((e) => e.message);
    assert.deepEqual(oidc, [{ type: 'oidc', result: 'sessionValid', subject: 'alice' }]);
    const idToken = seen2.headers['authorization']?.replace(/^Bearer /, '') ?? '';
    const text = JSON.stringify(trace);
    assert.ok(idToken.length > 20 && !text.includes(idToken), 'the trace never shows the token');
    assert.ok(!text.includes(session.value.slice(0, 40)), 'nor the session cookie');
  });

  test('claims in authorization rules: bob logs in and is refused (403), not sent to log in again', async () => {
    const { page } = await loggedIn('/app/page', 'bob');
    assert.equal(page.status, 403, page.text);
  });

  test('the callback request is traced: callbackOk with the subject', async () => {
    const b = new Browser();
    const stopped = await b.navigate(proxy.url('/app/t'), {
      account: 'alice',
      stopAt: (u) => u.pathname === '/app/oauth/callback',
    });
    const events = proxy.trace();
    const r = await b.request(stopped.url);
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), '/app/t');
    const oidc = (await events).filter((e) => e.message.type === 'oidc').map((e) => e.message);
    assert.deepEqual(oidc, [{ type: 'oidc', result: 'callbackOk', subject: 'alice' }]);
  });

  test('requests that are not navigations: a fetch (Sec-Fetch-Mode cors) gets 401; a client without Accept is sent to log in', async () => {
    const f = await fetch(proxy.url('/app/api'), { headers: { 'sec-fetch-mode': 'cors' } });
    assert.equal(f.status, 401);
    assert.match(await f.text(), /no OIDC session/);
    const curl = await httpGet(proxy.port(), '/app/api', { headers: { accept: '*/*' } });
    assert.equal(curl.status, 302, "agentgateway's behaviour: every unauthenticated request enters login");
  });
});

describe('refresh', () => {
  test('after the tokens expire the refresh token renews the session, the new cookie comes with the answer', async () => {
    const { browser, page } = await loggedIn('/short/page');
    assert.equal(page.status, 200, page.text);
    const first = sessionCookies(browser)[0]?.value;
    await new Promise((r) => setTimeout(r, 3_500));
    const events = proxy.trace();
    const r = await browser.request(proxy.url('/short/page'));
    assert.equal(r.status, 200, r.text);
    const oidc = (await events).filter((e) => e.message.type === 'oidc').map((e) => e.message);
    assert.deepEqual(oidc, [{ type: 'oidc', result: 'refreshed', subject: 'alice' }]);
    const second = sessionCookies(browser)[0]?.value;
    assert.ok(second && second !== first, 'a new session cookie');
    const seen = JSON.parse(r.text) as { headers: Record<string, string> };
    assert.doesNotMatch(seen.headers['cookie'] ?? '', /gw_oidc_/);
    // the renewed session is good without the provider
    const events2 = proxy.trace();
    assert.equal((await browser.request(proxy.url('/short/page'))).status, 200);
    assert.equal((await events2).find((e) => e.message.type === 'oidc')?.message['result'], 'sessionValid');
  });
});

describe('logout', () => {
  test("a POST from the redirectURI's origin clears the session and goes on to the provider's end_session_endpoint", async () => {
    const { browser, page } = await loggedIn('/app/page');
    assert.equal(page.status, 200);
    const token = (JSON.parse(page.text) as { headers: Record<string, string> }).headers['authorization'];
    const r = await browser.request(proxy.url('/app/logout'), {
      method: 'POST',
      headers: { origin: new URL(proxy.url()).origin },
    });
    assert.equal(r.status, 303);
    const to = new URL(r.headers.get('location') ?? '');
    assert.equal(`${to.origin}${to.pathname}`, idp.metadata['end_session_endpoint']);
    assert.equal(to.searchParams.get('client_id'), CLIENT.clientId);
    assert.equal(`Bearer ${to.searchParams.get('id_token_hint')}`, token);
    assert.equal(sessionCookies(browser).length, 0, 'the session cookie is gone');
    const end = await browser.request(to.toString());
    assert.equal(end.status, 200, 'the provider shows its logout page');
    const next = await browser.request(proxy.url('/app/page'));
    assert.equal(next.status, 302, 'logged out: sent to log in again');
  });

  test('a GET is 405; a POST from another origin or without one is 403', async () => {
    const { browser } = await loggedIn('/app/page');
    assert.equal((await browser.request(proxy.url('/app/logout'))).status, 405);
    const foreign = await browser.request(proxy.url('/app/logout'), {
      method: 'POST',
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(foreign.status, 403);
    assert.match(foreign.text, /logout must be a POST from http:\/\/127\.0\.0\.1:/);
    assert.equal((await browser.request(proxy.url('/app/logout'), { method: 'POST' })).status, 403);
    assert.equal(sessionCookies(browser).length, 1, 'still logged in');
    assert.equal((await browser.request(proxy.url('/app/page'))).status, 200);
  });
});

describe('failures', () => {
  test('a tampered session cookie restarts the login (and clears it), never a 500', async () => {
    const { browser } = await loggedIn('/app/page');
    const [session] = sessionCookies(browser);
    assert.ok(session);
    const i = Math.floor(session.value.length / 2);
    session.value = `${session.value.slice(0, i)}${session.value[i] === 'A' ? 'B' : 'A'}${session.value.slice(i + 1)}`;
    const events = proxy.trace();
    const r = await browser.request(proxy.url('/app/page'));
    assert.equal(r.status, 302);
    assert.ok(r.headers.get('location')?.startsWith(idp.metadata['authorization_endpoint'] as string));
    assert.ok(
      r.headers.getSetCookie().some((c) => c.startsWith(`${session.name}=;`) && c.includes('Max-Age=0')),
      'the bad cookie is cleared',
    );
    const oidc = (await events).filter((e) => e.message.type === 'oidc').map((e) => e.message['result']);
    assert.deepEqual(oidc, ['failure', 'loginRedirect']);
    const again = await browser.navigate(proxy.url('/app/page'), { account: 'alice' });
    assert.equal(again.status, 200, 'logging in again works');
  });

  test('a callback that does not match a login in progress is 400 with the reason; a provider error is 401', async () => {
    const b = new Browser();
    const start = await b.request(proxy.url('/app/page'));
    const state = new URL(start.headers.get('location') ?? '').searchParams.get('state') ?? '';
    const [t] = state.split('.');
    const cb = async (query: string) => {
      const r = await b.request(`${callback('app')}?${query}`);
      return { status: r.status, text: r.text };
    };
    const mismatch = await cb(`state=${t}.AAAAAAAAAAAAAAAAAAAAAA&code=c`);
    assert.equal(mismatch.status, 400);
    assert.match(mismatch.text, /the state parameter does not match the login in progress/);
    const unknown = await cb('state=BBBBBBBBBBBBBBBBBBBBBB.AAAAAAAAAAAAAAAAAAAAAA&code=c');
    assert.equal(unknown.status, 400);
    assert.match(unknown.text, /no login in progress for this state/);
    const garbage = await cb('state=%3Cscript%3E&code=c');
    assert.equal(garbage.status, 400);
    assert.match(garbage.text, /not one this gateway issued/);
    const refused = await cb(`state=${state}&error=access_denied&error_description=the+user+said+no`);
    assert.equal(refused.status, 401);
    assert.equal(refused.text, 'the OpenID provider refused the login: access_denied (the user said no)\n');
    const badCode = await cb(`state=${state}&code=not-a-code`);
    assert.equal(badCode.status, 401);
    assert.match(badCode.text, /refused the authorization_code grant: invalid_grant/);
  });

  test('the provider down is 502 with a clear message, no stack trace', async () => {
    const r = await new Browser().request(proxy.url('/down/page'));
    assert.equal(r.status, 502);
    assert.match(
      r.text,
      /^the OpenID provider did not answer: http:\/\/127\.0\.0\.1:\d+\/\.well-known\/openid-configuration: ECONNREFUSED\n$/,
    );
  });
});

describe('config', () => {
  const load = (oidc: string, dir = '/tmp') =>
    loadConfigText(
      'gw.yaml',
      `binds:
- port: 3000
  listeners:
  - routes:
    - policies:
        oidc:
${oidc
  .trim()
  .split('\n')
  .map((l) => `          ${l}`)
  .join('\n')}
      backends: [{host: "127.0.0.1:8080"}]
`,
      dir,
    );
  const base = `issuer: https://idp.example.com
clientId: gw
clientSecret: s3cret
redirectURI: https://app.example.com/oauth/callback`;
  const rejects = (oidc: string, re: RegExp) =>
    assert.throws(
      () => load(oidc),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.match(err.message, re);
        return true;
      },
    );

  test("agentgateway's fields load; files are read; the client secret is sealed", (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-oidc-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'jwks.json'), '{"keys":[]}');
    const ir = load(
      `${base}
authorizationEndpoint: https://idp.example.com/authorize
tokenEndpoint: https://idp.example.com/token
tokenEndpointAuth: clientSecretPost
jwks: {file: jwks.json}
scopes: [email]`,
      dir,
    ).ir;
    const p = ir.binds[0]?.listeners[0]?.routes[0]?.policies.oidc;
    assert.deepEqual(p?.jwks, { inline: '{"keys":[]}' });
    assert.equal(p?.tokenEndpointAuth, 'clientSecretPost');
    assert.equal(JSON.stringify(p).includes('s3cret'), false, 'the secret prints as [redacted]');
    assert.equal(p?.clientSecret.reveal(), 's3cret');
  });

  test('mistakes name their field', () => {
    rejects(base.replace('clientSecret: s3cret\n', ''), /oidc\.clientSecret/);
    rejects(
      base.replace('https://app.example.com/oauth/callback', '/oauth/callback'),
      /oidc\.redirectURI: .*absolute http\(s\) URL/,
    );
    rejects(`${base}\nissuer2: x`, /oidc/);
    rejects(base.replace('https://idp.example.com', 'idp.example.com'), /oidc\.issuer: .*http\(s\) URL/);
    rejects(
      `${base}\ntokenEndpoint: https://idp.example.com/token`,
      /oidc: authorizationEndpoint, tokenEndpoint and jwks must either all be set/,
    );
    rejects(
      `${base}\ntokenEndpointAuth: clientSecretBasic`,
      /oidc\.tokenEndpointAuth: .*only for an explicit provider/,
    );
    rejects(`${base}\ntokenEndpointAuth: privateKeyJwt`, /oidc\.tokenEndpointAuth/);
    rejects(
      `${base}\njwks: '{"nokeys": 1}'\nauthorizationEndpoint: https://a/b\ntokenEndpoint: https://a/c`,
      /oidc\.jwks: JWKS must be/,
    );
    rejects(
      `${base}\ndiscovery: '{"issuer": "https://other.example.com"}'`,
      /oidc\.discovery: .*is not the issuer/,
    );
    rejects(`${base}\nlogout: {path: auth/logout}`, /oidc\.logout\.path: logout\.path must be a local path/);
    rejects(
      `${base}\nlogout: {path: /oauth/callback}`,
      /oidc\.logout\.path: .*must differ from redirectURI's path/,
    );
    rejects(`${base}\nlogout: {path: /logout, redirect: "//evil.example"}`, /oidc\.logout\.redirect/);
    rejects(`${base}\nlogin: {path: /login}`, /oidc\.login.* is not supported by this build of gw yet/);
    rejects(`${base}\ndiscovery: {file: /nonexistent/discovery.json}`, /oidc\.discovery\.file/);
  });
});
