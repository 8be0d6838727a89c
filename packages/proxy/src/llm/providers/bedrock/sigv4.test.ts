// SigV4 credentials when the environment has none and the SDK's default chain finds none either: a
// clear error, and for a minute no second walk of the chain (its metadata lookups are slow off AWS).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '@gw/testkit/temp-dir';
import { GwError } from '../../../errors.ts';
import type { ProviderRequest } from '../types.ts';
import { sigV4 } from './sigv4.ts';

const request = (): ProviderRequest => ({
  method: 'POST',
  path: '/model/m/converse',
  headers: { host: 'bedrock-runtime.us-east-1.amazonaws.com', 'content-type': 'application/json' },
  body: Buffer.from('{}'),
});

test('no AWS credentials anywhere: a GwError naming the cause, then no new lookup for a minute', async () => {
  const dir = tempDir('gw-aws-none-');
  for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
  process.env.AWS_SHARED_CREDENTIALS_FILE = join(dir, 'credentials');
  process.env.AWS_CONFIG_FILE = join(dir, 'config');
  process.env.AWS_EC2_METADATA_DISABLED = 'true';
  await assert.rejects(sigV4(request(), 'us-east-1', 'bedrock'), (err: unknown) => {
    assert.ok(err instanceof GwError);
    assert.match(err.message, /no AWS credentials to sign with/);
    return true;
  });
  // Credentials appear, but the failure is remembered: the chain is not walked on every request.
  writeFileSync(join(dir, 'credentials'), '[default]\naws_access_key_id = AKID\naws_secret_access_key = s\n');
  await assert.rejects(sigV4(request(), 'us-east-1', 'bedrock'), /no AWS credentials/);
  // The environment is read on every request, failure or not.
  process.env.AWS_ACCESS_KEY_ID = 'AKID';
  process.env.AWS_SECRET_ACCESS_KEY = 's';
  const req = request();
  await sigV4(req, 'us-east-1', 'bedrock');
  assert.match(String(req.headers.authorization), /^AWS4-HMAC-SHA256 Credential=AKID\//);
});
