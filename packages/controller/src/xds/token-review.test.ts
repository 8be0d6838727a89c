// TokenReview against the real kube-apiserver: a projected service account token authenticates and is
// bound to the Gateway named after its ServiceAccount; other tokens and audiences are refused.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KubeHarness, startKube } from '@gw/testkit';
import { reviewToken, tokenReviewAuthenticator } from './token-review.ts';

let kube: KubeHarness;
let saToken: string;

before(async () => {
  kube = await startKube({ gatewayApi: false, crdDirs: [] });
  for (const args of [
    ['create', 'namespace', 'team'],
    ['create', 'serviceaccount', 'web', '-n', 'team'],
  ]) {
    const r = await kube.kubectl(args);
    assert.equal(r.code, 0, r.stderr);
  }
  const r = await kube.kubectl(['create', 'token', 'web', '-n', 'team', '--audience', 'gw-xds']);
  assert.equal(r.code, 0, r.stderr);
  saToken = r.stdout.trim();
});
after(() => kube?.stop());

describe('TokenReview', () => {
  test('a service account token is authenticated and bound to the Gateway of that name', async () => {
    const conn = { server: kube.server, token: kube.token, ca: kube.ca };
    const review = await reviewToken(conn, saToken, ['gw-xds']);
    assert.equal(review.authenticated, true);
    assert.equal(review.authenticated && review.user.username, 'system:serviceaccount:team:web');
    const auth = tokenReviewAuthenticator(conn, { audiences: ['gw-xds'] });
    assert.deepEqual(await auth(saToken), { ok: true, gateway: 'team/web' });
  });

  test('a token for another audience, a made-up token and a user without a Gateway are refused', async () => {
    const conn = { server: kube.server, token: kube.token, ca: kube.ca };
    const other = await tokenReviewAuthenticator(conn, { audiences: ['something-else'] })(saToken);
    assert.equal(other.ok, false);
    const bogus = await tokenReviewAuthenticator(conn)('not-a-token');
    assert.equal(bogus.ok, false);
    // A static-token user is authenticated but is no ServiceAccount: it may read no Gateway.
    const user = await tokenReviewAuthenticator(conn)(kube.unprivilegedToken);
    assert.deepEqual(user, { ok: false, reason: "gw-nobody may not read any Gateway's configuration" });
  });

  test('a controller without the right to create TokenReviews gets an error, not a verdict', async () => {
    await assert.rejects(
      reviewToken({ server: kube.server, token: kube.unprivilegedToken, ca: kube.ca }, saToken),
      /TokenReview answered 403/,
    );
  });
});
