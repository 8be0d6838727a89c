// backendAuth aws.assumeRole: the AWS SDK's STS client (as gw runs it) against a fake STS speaking
// the query protocol, from the ambient credentials; the session name and tags from each request, the
// credentials cached per session, and the upstream's signature checked with the role's credentials.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { type AwsCredentialsForTest, verifySigV4 } from '@gw/testkit/aws-sigv4';
import { type FakeSts, startFakeSts } from '@gw/testkit/aws-sts';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { startUpstream, type TestServer } from '@gw/testkit/upstream';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

const BASE: AwsCredentialsForTest = { accessKeyId: 'AKIAGWBASE0000000001', secretAccessKey: 'base-secret' };
const ROLE = 'arn:aws:iam::123456789012:role/gw-bedrock';
const DENIED = 'arn:aws:iam::123456789012:role/not-for-gw';

let sts: FakeSts;
let up: TestServer;
let proxy: TestProxy;
const verdicts: string[] = [];
const saved = { ...process.env };

before(async () => {
  sts = await startFakeSts([BASE], 'us-east-1');
  // The SDK's own endpoint override (AWS_ENDPOINT_URL_<service>), and the ambient credentials.
  process.env.AWS_ENDPOINT_URL_STS = sts.origin;
  process.env.AWS_ACCESS_KEY_ID = BASE.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = BASE.secretAccessKey;
  delete process.env.AWS_SESSION_TOKEN;
  up = await startUpstream('aws', async (req, res, echo) => {
    const check = await verifySigV4(
      req,
      Buffer.from(echo.body),
      sts.calls.map((c) => c.issued),
      'execute-api',
      'us-east-1',
    );
    verdicts.push(check.ok ? `valid ${check.sigv4.accessKeyId}` : `invalid: ${check.reason}`);
    res.writeHead(check.ok ? 200 : 403, { 'content-type': 'text/plain' }).end(check.ok ? 'ok' : 'denied');
  });
  const backend = (role: string, extra = '') => `      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth:
            aws:
              region: us-east-1
              serviceName: execute-api
              assumeRole:
                roleArn: ${role}${extra}
                sessionName: {expression: 'request.headers["x-user"]'}
                tags:
                - {key: team, expression: 'request.headers["x-team"]'}
                - {key: app, value: gw}`;
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /denied}}]
      backends:
${backend(DENIED)}
    - matches: [{path: {pathPrefix: /external}}]
      backends:
${backend(ROLE, '\n                externalId: "partner-7f3a"')}
    - backends:
${backend(ROLE)}
`);
});

after(async () => {
  await proxy?.close();
  await up?.close();
  await sts?.close();
  process.env = saved;
});

const get = async (path: string, headers: Record<string, string>) => {
  const r = await request(proxy.url(path), { headers });
  return { status: r.statusCode, text: await r.body.text() };
};

describe('aws.assumeRole', () => {
  test('the role is assumed with the ambient credentials, for the session and tags of the request', async () => {
    const r = await get('/fn', { 'x-user': 'alice', 'x-team': 'red' });
    assert.equal(r.status, 200, r.text);
    assert.equal(sts.calls.length, 1);
    assert.deepEqual(
      { ...sts.calls[0], issued: undefined },
      { roleArn: ROLE, sessionName: 'alice', tags: { team: 'red', app: 'gw' }, issued: undefined },
    );
    // signed with the role's credentials, its session token sent
    assert.equal(verdicts.at(-1), `valid ${sts.calls[0]?.issued.accessKeyId}`);
  });

  test("externalId (agentgateway's) goes to STS with the AssumeRole call; without it none is sent", async () => {
    const r = await get('/external', { 'x-user': 'erin', 'x-team': 'blue' });
    assert.equal(r.status, 200, r.text);
    assert.equal(sts.calls.at(-1)?.externalId, 'partner-7f3a');
    assert.equal(sts.calls[0]?.externalId, undefined);
  });

  test('the credentials are kept per session: the same session asks STS once, another asks again', async () => {
    const before = sts.calls.length;
    await Promise.all([
      get('/fn', { 'x-user': 'alice', 'x-team': 'red' }),
      get('/fn', { 'x-user': 'alice', 'x-team': 'red' }),
    ]);
    assert.equal(sts.calls.length, before);
    const r = await get('/fn', { 'x-user': 'bob', 'x-team': 'red' });
    assert.equal(r.status, 200, r.text);
    assert.equal(sts.calls.length, before + 1);
    assert.equal(sts.calls.at(-1)?.sessionName, 'bob');
    assert.equal(verdicts.at(-1), `valid ${sts.calls.at(-1)?.issued.accessKeyId}`);
  });

  test('a session name the request does not give, or not a valid one, is refused before STS is asked', async () => {
    const before = sts.calls.length;
    let r = await get('/fn', { 'x-team': 'red' });
    assert.equal(r.status, 403);
    assert.match(r.text, /the session name has no value for this request/);
    r = await get('/fn', { 'x-user': 'not a name!', 'x-team': 'red' });
    assert.equal(r.status, 403);
    assert.match(r.text, /is not a session name/);
    assert.equal(sts.calls.length, before);
  });

  test('a role STS refuses: an error naming the role, nothing sent upstream', async () => {
    sts.refused.add(DENIED);
    const sent = up.seen.length;
    const r = await get('/denied/fn', { 'x-user': 'alice', 'x-team': 'red' });
    assert.equal(r.status, 500);
    assert.match(r.text, /STS refused to assume arn:aws:iam::123456789012:role\/not-for-gw/);
    assert.equal(up.seen.length, sent);
  });

  test('config errors name the field', () => {
    const load = (assume: string) =>
      loadConfigText(
        'gw.yaml',
        `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - host: 127.0.0.1:9\n        policies: {backendAuth: {aws: {region: us-east-1, assumeRole: ${assume}}}}\n`,
        process.cwd(),
      );
    assert.throws(
      () => load('{roleArn: gw-role}'),
      (e: unknown) =>
        e instanceof ConfigError && /assumeRole\.roleArn: expected an IAM role ARN/.test(e.message),
    );
    assert.throws(
      () => load(`{roleArn: "${ROLE}", sessionName: "a b"}`),
      (e: unknown) =>
        e instanceof ConfigError && /assumeRole\.sessionName: a session name is 2 to 64/.test(e.message),
    );
    assert.throws(
      () => load(`{roleArn: "${ROLE}", tags: [{key: k}]}`),
      (e: unknown) =>
        e instanceof ConfigError && /assumeRole\.tags\[0\]: set value or expression/.test(e.message),
    );
    assert.throws(
      () => load(`{roleArn: "${ROLE}", sessionName: {expression: "nope("}}`),
      (e: unknown) =>
        e instanceof ConfigError && /assumeRole\.sessionName\.expression: invalid CEL/.test(e.message),
    );
  });
});
