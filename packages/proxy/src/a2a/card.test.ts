// How card URLs are pointed at the gateway: origin replaced, the card's base path moved to the
// client's, anything that is not an http(s) URL left alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cardSuffix, rewriteCard, urlMapper } from './card.ts';

test('the origin becomes the gateway; without a path rewrite the path stays', () => {
  const map = urlMapper('https://gw.example', '', '');
  assert.equal(map('http://10.0.0.5:9999/a2a/jsonrpc?x=1'), 'https://gw.example/a2a/jsonrpc?x=1');
  assert.equal(map('http://10.0.0.5:9999'), 'https://gw.example/');
});

test('a path under the base the agent served the card from moves under the one the client used', () => {
  // client: /agents/echo/.well-known/agent-card.json; agent: /.well-known/agent-card.json
  const fromRoot = urlMapper('http://gw', '/agents/echo', '');
  assert.equal(fromRoot('http://agent:1/'), 'http://gw/agents/echo/');
  assert.equal(fromRoot('http://agent:1/a2a/jsonrpc'), 'http://gw/agents/echo/a2a/jsonrpc');
  // client: /x/.well-known/…; agent: /svc/.well-known/…
  const nested = urlMapper('http://gw', '/x', '/svc');
  assert.equal(nested('http://agent:1/svc/rpc'), 'http://gw/x/rpc');
  assert.equal(nested('http://agent:1/svc'), 'http://gw/x');
  assert.equal(nested('http://agent:1/service/rpc'), 'http://gw/service/rpc', 'not under /svc: kept');
});

test('values that are not http(s) URLs are left as they are', () => {
  const map = urlMapper('http://gw', '', '');
  for (const v of ['agent:50051', 'grpc://agent:50051', '/relative', '']) assert.equal(map(v), v);
});

test('rewriteCard touches url, additionalInterfaces[].url and supportedInterfaces[].url only', () => {
  const card = {
    url: 'http://a:1/rpc',
    documentationUrl: 'http://a:1/docs',
    provider: { url: 'http://vendor.example' },
    additionalInterfaces: [{ url: 'http://a:1/rpc', transport: 'JSONRPC' }, { transport: 'GRPC' }, 'junk'],
    supportedInterfaces: [{ url: 'http://a:1/v1', protocolBinding: 'HTTP+JSON' }],
  };
  assert.equal(rewriteCard(card, urlMapper('http://gw', '', '')), 3);
  assert.deepEqual(card, {
    url: 'http://gw/rpc',
    documentationUrl: 'http://a:1/docs',
    provider: { url: 'http://vendor.example' },
    additionalInterfaces: [{ url: 'http://gw/rpc', transport: 'JSONRPC' }, { transport: 'GRPC' }, 'junk'],
    supportedInterfaces: [{ url: 'http://gw/v1', protocolBinding: 'HTTP+JSON' }],
  });
});

test('both well-known card paths, under any prefix', () => {
  assert.equal(cardSuffix('/.well-known/agent-card.json'), '/.well-known/agent-card.json');
  assert.equal(cardSuffix('/agents/x/.well-known/agent.json'), '/.well-known/agent.json');
  assert.equal(cardSuffix('/.well-known/agent-card.jsonx'), undefined);
});
