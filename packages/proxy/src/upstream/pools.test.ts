// PoolRegistry: a pool is shared by the specs that make the same connections, and only by them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Secret } from '../secret.ts';
import { PoolRegistry, type PoolSpec } from './pools.ts';

const base: PoolSpec = {
  origin: 'https://backend.example:443',
  connectTimeoutMs: 1000,
  idleTimeoutMs: 1000,
  maxConnections: null,
  keepalive: { enabled: true, timeMs: 1000, intervalMs: 1000, retries: 3 },
  allowH2: false,
};
const withKey = (key: string): PoolSpec => ({ ...base, tls: { cert: 'CERT', key: new Secret(key) } });

test('a pool is shared by equal specs, secrets compared by value, and not by specs that differ', () => {
  const pools = new PoolRegistry();
  try {
    assert.equal(pools.acquire({ ...base }), pools.acquire({ ...base }));
    // the same client key, held by another Secret (as each config version has its own)
    const a = pools.acquire(withKey('key one'));
    assert.equal(pools.acquire(withKey('key one')), a);
    // a rotated key makes new connections
    assert.notEqual(pools.acquire(withKey('key two')), a);
    assert.notEqual(pools.acquire({ ...base, origin: 'https://other.example:443' }), pools.acquire(base));
  } finally {
    pools.retainOnly(new Set());
  }
});
