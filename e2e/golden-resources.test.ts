// Every Gateway's resources in every translator golden case, encoded as the xDS server sends them and
// built by the proxy as its xDS client does (assemble → standalone loader): none is refused. The
// controller's checks (@gw/api) catch what the proxy would otherwise NACK, so a user's mistake shows as
// a status on their object and never blocks the rest of the Gateway.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ConfigError } from '@gw/api';
import { translate } from '@gw/controller/translator/translate';
import { loadConfigObject } from '@gw/proxy/config/load';
import { assembleConfig } from '@gw/proxy/xds-client/assemble';
import { type Resource, ResourceSchema } from '@gw/xds-proto/gw/resource/v1/resource';
import { goldenCases } from '../packages/controller/test/golden-cases.ts';

// These cases carry placeholder PEM text. The translator checks only that a certificate Secret holds
// PEM; whether the pair loads needs node:tls, which the pure translator does not use, so a Secret with
// a broken key pair is still refused by the proxy (a NACK on the Gateway's status).
const PLACEHOLDER_CERTIFICATES = new Set([
  'listener-https.yaml',
  'listener-https-cross-namespace-grant.yaml',
  'tlsroute-terminate.yaml',
  'tlsroute-terminate-conflict.yaml',
]);

for (const c of goldenCases()) {
  const skip = PLACEHOLDER_CERTIFICATES.has(c.file) ? 'placeholder certificates' : false;
  test(`${c.file}: the proxy builds every Gateway's resources`, { skip }, () => {
    const out = translate({
      objects: c.objects,
      controllerName: 'gw.dev/gw',
      ...(c.options?.modelsEnabled ? { modelsEnabled: true } : {}),
      ...(c.options?.inferenceEnabled ? { inferenceEnabled: true } : {}),
    });
    for (const [gateway, resources] of Object.entries(out.gateways)) {
      const decoded = new Map<string, Resource>(
        resources.map((r) => [r.name, fromJson(ResourceSchema, r.resource as unknown as JsonValue)]),
      );
      const a = assembleConfig(decoded);
      assert.deepEqual(a.problems, [], `${gateway}: assembly problems`);
      try {
        loadConfigObject(`golden ${c.file} ${gateway}`, a.data, process.cwd(), a.origin, {
          allowNoListeners: true,
        });
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        assert.fail(`${gateway}: the proxy refuses:\n${err.message}`);
      }
    }
  });
}
