import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '@gw/testkit/temp-dir';
import { GwctlError } from './errors.ts';
import { parseCurlArgs } from './inject-request.ts';

const header = (r: ReturnType<typeof parseCurlArgs>, name: string) =>
  r.headers.filter(([k]) => k.toLowerCase() === name).map(([, v]) => v);

test('a bare URL is a GET with curl-like default headers', () => {
  const r = parseCurlArgs(['http://api.example/x?y=1']);
  assert.equal(r.method, 'GET');
  assert.equal(r.url.host, 'api.example');
  assert.equal(r.url.pathname + r.url.search, '/x?y=1');
  assert.equal(r.body, undefined);
  assert.deepEqual(header(r, 'accept'), ['*/*']);
  assert.deepEqual(header(r, 'user-agent'), ['gwctl']);
});

test('-d implies POST and a form content type; several -d are joined with &', () => {
  const r = parseCurlArgs(['http://a/', '-d', 'a=1', '--data', 'b=2']);
  assert.equal(r.method, 'POST');
  assert.equal(r.body?.toString(), 'a=1&b=2');
  assert.deepEqual(header(r, 'content-type'), ['application/x-www-form-urlencoded']);
});

test('-X, repeated -H, joined short forms and --opt=value', () => {
  const r = parseCurlArgs([
    '-XPUT',
    'a.example/p',
    '-H',
    'x-a: 1',
    '-Hx-a: 2',
    '--header=Content-Type: text/plain',
    '-sS',
  ]);
  assert.equal(r.method, 'PUT');
  assert.equal(r.url.href, 'http://a.example/p', 'a URL without a scheme is http');
  assert.deepEqual(header(r, 'x-a'), ['1', '2']);
  assert.deepEqual(header(r, 'content-type'), ['text/plain']);
});

test('--data-binary keeps newlines of a file; -d @file strips them; --data-raw keeps a leading @', () => {
  const dir = tempDir('gwctl-curl-');
  const f = join(dir, 'body');
  writeFileSync(f, 'one\ntwo\n');
  assert.equal(parseCurlArgs(['http://a/', '--data-binary', `@${f}`]).body?.toString(), 'one\ntwo\n');
  assert.equal(parseCurlArgs(['http://a/', '-d', `@${f}`]).body?.toString(), 'onetwo');
  assert.equal(parseCurlArgs(['http://a/', '--data-raw', '@x']).body?.toString(), '@x');
});

test('-u sets basic auth; an empty header value drops the header; -k and -m', () => {
  const r = parseCurlArgs(['https://a/', '-u', 'me:pw', '-H', 'accept:', '-k', '-m', '2.5']);
  assert.deepEqual(header(r, 'authorization'), [`Basic ${Buffer.from('me:pw').toString('base64')}`]);
  assert.deepEqual(header(r, 'accept'), []);
  assert.equal(r.insecure, true);
  assert.equal(r.maxTimeMs, 2500);
});

test('mistakes are usage errors that say what is wrong', () => {
  const usage = (args: string[], re: RegExp) =>
    assert.throws(
      () => parseCurlArgs(args),
      (e: unknown) => e instanceof GwctlError && e.code === 'GWCTL_ERR_USAGE' && re.test(e.message),
    );
  usage([], /no URL after --/);
  usage(['http://a/', '--proxy', 'p'], /unsupported curl argument --proxy/);
  usage(['http://a/', 'http://b/'], /only one URL/);
  usage(['http://a/', '-H', 'novalue'], /expected 'Name: value'/);
  usage(['http://a/', '-H', 'bad name: v'], /is not a header name/);
  usage(['ftp://a/'], /only http and https/);
  usage(['http://a/', '-X'], /-X needs a value/);
});
