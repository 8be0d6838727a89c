import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ERRORS, type ErrorCode, errorFormatFor, errorResponse, GwError } from './errors.ts';

const parse = (b: Buffer) => JSON.parse(b.toString('utf8'));

test('plain HTTP: one text line with the reason, the catalogue status, headers the error carries', () => {
  const a = errorResponse(
    new GwError('GW_ERR_RATE_LIMITED', undefined, { headers: { 'x-ratelimit-limit': '3' } }),
    'http',
  );
  assert.equal(a.status, 429);
  assert.equal(a.body.toString(), 'rate limit exceeded\n');
  assert.equal(a.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(a.headers['content-length'], String(a.body.length));
  assert.equal(a.headers['x-ratelimit-limit'], '3');
});

test('OpenAI: the error object the openai SDK reads (message, type, param, code)', () => {
  const a = errorResponse(new GwError('GW_ERR_UNAUTHENTICATED', 'missing API key'), 'openai');
  assert.equal(a.status, 401);
  assert.equal(a.headers['content-type'], 'application/json');
  assert.deepEqual(parse(a.body), {
    error: {
      message: 'missing API key',
      type: 'authentication_error',
      param: null,
      code: 'gw_err_unauthenticated',
    },
  });
  assert.equal(
    parse(errorResponse(new GwError('GW_ERR_RATE_LIMITED'), 'openai').body).error.type,
    'requests',
  );
  assert.equal(
    parse(errorResponse(new GwError('GW_ERR_UPSTREAM_CONNECT'), 'openai').body).error.type,
    'server_error',
  );
});

test('Anthropic: the documented error envelope and types', () => {
  const cases: [ErrorCode, string][] = [
    ['GW_ERR_BAD_REQUEST', 'invalid_request_error'],
    ['GW_ERR_JWT_INVALID', 'authentication_error'],
    ['GW_ERR_FORBIDDEN', 'permission_error'],
    ['GW_ERR_NO_ROUTE', 'not_found_error'],
    ['GW_ERR_REQUEST_TOO_LARGE', 'request_too_large'],
    ['GW_ERR_RATE_LIMITED', 'rate_limit_error'],
    ['GW_ERR_UPSTREAM_CONNECT', 'overloaded_error'],
    ['GW_ERR_INTERNAL', 'api_error'],
  ];
  for (const [code, type] of cases) {
    const a = errorResponse(new GwError(code), 'anthropic');
    assert.equal(a.status, ERRORS[code].status);
    assert.deepEqual(parse(a.body), { type: 'error', error: { type, message: ERRORS[code].message } }, code);
  }
});

test('JSON-RPC: the request id echoed when it was read, else null; the HTTP status kept', () => {
  for (const id of [2, 'req-7']) {
    assert.equal(parse(errorResponse(new GwError('GW_ERR_FORBIDDEN'), 'jsonrpc', id).body).id, id);
  }
  const a = errorResponse(new GwError('GW_ERR_FORBIDDEN'), 'jsonrpc');
  assert.equal(a.status, 403);
  assert.deepEqual(parse(a.body), {
    jsonrpc: '2.0',
    id: null,
    error: { code: -32000, message: 'authorization denied', data: { code: 'GW_ERR_FORBIDDEN', status: 403 } },
  });
  assert.equal(parse(errorResponse(new GwError('GW_ERR_BAD_REQUEST'), 'jsonrpc').body).error.code, -32600);
});

test('gRPC: a trailers-only answer, HTTP 200 with grpc-status and a percent-encoded grpc-message', () => {
  const a = errorResponse(new GwError('GW_ERR_RATE_LIMITED', 'limit: 5% über'), 'grpc');
  assert.equal(a.status, 200);
  assert.equal(a.headers['content-type'], 'application/grpc');
  assert.equal(a.headers['grpc-status'], '8');
  assert.equal(a.headers['grpc-message'], 'limit: 5%25 %C3%BCber');
  assert.equal(a.body.length, 0);
  assert.equal(errorResponse(new GwError('GW_ERR_NO_ROUTE'), 'grpc').headers['grpc-status'], '12');
  assert.equal(errorResponse(new GwError('GW_ERR_JWT_INVALID'), 'grpc').headers['grpc-status'], '16');
});

test('a gRPC request gets a gRPC status whatever its route; others get their route format', () => {
  assert.equal(errorFormatFor('application/grpc+proto', 'http'), 'grpc');
  assert.equal(errorFormatFor('application/grpc', undefined), 'grpc');
  assert.equal(errorFormatFor('application/json', 'openai'), 'openai');
  assert.equal(errorFormatFor(undefined, undefined), 'http');
});
