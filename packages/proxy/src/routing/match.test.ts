// Route, header and query regexes written in Rust's regex syntax (agentgateway's) match as they do
// there, served through a real listener: Unicode classes (`\p{L}`, `\pL`), code points (`\x{41}`)
// and class operations (`[a-z&&[^b]]`) need JavaScript's u or v flag, which every place compiling a
// config regex adds. What has no JavaScript form is refused at load, naming the field.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { configIssues } from '../config/test-support.ts';

let proxy: TestProxy;

const route = (name: string, match: string) => `    - name: ${name}
      matches: [${match}]
      policies: {directResponse: {status: 200, body: ${name}}}
`;

const ROUTES: [name: string, match: string][] = [
  ['unicode-class', String.raw`{path: {regex: '/u/\p{L}+'}}`],
  ['short-class', String.raw`{path: {regex: '/s/\pL+'}}`],
  ['intersect', `{path: {regex: '/c/[a-z&&[^b]]'}}`],
  ['hex', String.raw`{path: {regex: '/h/\x{41}'}}`],
  ['escaped-dash', String.raw`{path: {regex: '/e/a\-b'}}`],
  [
    'header',
    String.raw`{path: {pathPrefix: /hd}, headers: [{name: x-t, value: {regex: '\p{Lu}+[0-9&&[^5]]'}}]}`,
  ],
  ['query', String.raw`{path: {pathPrefix: /q}, query: [{name: v, value: {regex: '\x{41}[a-c~~b-d]'}}]}`],
];

before(async () => {
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${ROUTES.map(([name, match]) => route(name, match)).join('')}`);
});

after(async () => {
  await proxy?.close();
});

async function routed(path: string, headers: Record<string, string> = {}): Promise<string> {
  const r = await request(proxy.url(path), { headers });
  const body = await r.body.text();
  return r.statusCode === 200 ? body : String(r.statusCode);
}

describe("Rust's regex syntax in route matches", () => {
  test('path regexes with \\p{L}, \\pL, [a-z&&[^b]] and \\x{41} match as in agentgateway', async () => {
    assert.equal(await routed('/u/abc'), 'unicode-class');
    assert.equal(await routed('/u/p%7BL%7D'), '404');
    assert.equal(await routed('/s/abc'), 'short-class');
    assert.equal(await routed('/c/a'), 'intersect');
    assert.equal(await routed('/c/b'), '404');
    assert.equal(await routed('/h/A'), 'hex');
    // a pattern that needs no flag keeps its meaning (`\-` is an error with the u flag)
    assert.equal(await routed('/e/a-b'), 'escaped-dash');
  });

  test('header and query regexes too', async () => {
    assert.equal(await routed('/hd', { 'x-t': 'AB1' }), 'header');
    assert.equal(await routed('/hd', { 'x-t': 'AB5' }), '404');
    assert.equal(await routed('/q?v=Aa'), 'query');
    assert.equal(await routed('/q?v=Ab'), '404');
  });

  test('a construct with no JavaScript form is refused at load, at its line and field', () => {
    const issues = configIssues(`binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /}, query: [{name: v, value: {regex: '\\p{Age=3.0}'}}]}]
      policies: {directResponse: {status: 200, body: x}}
`);
    assert.match(
      issues,
      /gw\.yaml:5:\d+: binds\[0\]\.listeners\[0\]\.routes\[0\]\.matches\[0\]\.query\[0\]\.value\.regex: invalid regular expression: \\p\{Age=3\.0\}: JavaScript has no Unicode property "Age"/,
    );
  });
});
