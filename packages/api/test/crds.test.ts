// The gw.dev CRDs against the real API server and against the runtime validator, case by case:
// testdata/<kind>_valid.yaml must be accepted by both, and every case of testdata/<kind>_invalid.yaml
// must be rejected by both with an error containing the case's `error` text. The API server sees each
// case as a server-side dry-run create with strict field validation, as `kubectl apply` sends it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type KubeHarness, startKube } from '@gw/testkit/kube';
import { parse, parseAllDocuments } from 'yaml';
import {
  API_VERSION,
  GROUP,
  KINDS,
  type KindDefinition,
  VERSION,
  validateResource,
} from '../src/crd/crds.ts';
import { formatError } from '../src/crd/validate.ts';

const here = dirname(fileURLToPath(import.meta.url));
const testdata = join(here, 'testdata');
const root = join(here, '../../..');

interface Case {
  file: string;
  kind: KindDefinition;
  name: string;
  valid: boolean;
  error?: string;
  spec: unknown;
}

function loadCases(): Case[] {
  const cases: Case[] = [];
  for (const file of readdirSync(testdata).sort()) {
    const m = /^([a-z]+)_(valid|invalid)\.yaml$/.exec(file);
    if (!m) continue;
    const kind = KINDS.find((k) => k.kind.toLowerCase() === m[1]);
    assert.ok(kind, `${file}: no kind named ${m[1]}`);
    const items = parse(readFileSync(join(testdata, file), 'utf8'), { maxAliasCount: -1 }) as unknown;
    assert.ok(Array.isArray(items), `${file}: expected a list of cases`);
    for (const item of items as Record<string, unknown>[]) {
      const name = String(item['case']);
      assert.ok(item['spec'] !== undefined, `${file}: case ${name} has no spec`);
      if (m[2] === 'invalid')
        assert.ok(typeof item['error'] === 'string', `${file}: case ${name} names no error`);
      cases.push({
        file,
        kind,
        name,
        valid: m[2] === 'valid',
        ...(typeof item['error'] === 'string' ? { error: item['error'] } : {}),
        spec: item['spec'],
      });
    }
  }
  return cases;
}

const cases = loadCases();
const resource = (c: Case, i: number) => ({
  apiVersion: API_VERSION,
  kind: c.kind.kind,
  metadata: { name: `case-${i}`, namespace: 'default' },
  spec: c.spec,
});

test('there are at least 150 invalid cases across the kinds, and valid ones for each kind', () => {
  assert.ok(
    cases.filter((c) => !c.valid).length >= 150,
    `${cases.filter((c) => !c.valid).length} invalid cases`,
  );
  for (const k of KINDS) {
    assert.ok(
      cases.some((c) => c.valid && c.kind === k),
      `no valid case for ${k.kind}`,
    );
    assert.ok(
      cases.some((c) => !c.valid && c.kind === k),
      `no invalid case for ${k.kind}`,
    );
  }
});

test('the gw.dev resources in examples/k8s pass the runtime validation', () => {
  const dir = join(root, 'examples/k8s');
  let seen = 0;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      const r = doc.toJS() as { apiVersion?: string; kind?: string; metadata?: { name?: string } };
      if (r?.apiVersion !== API_VERSION) continue;
      seen++;
      const v = validateResource(r);
      assert.ok(
        v.ok,
        `${file}: ${r.kind}/${r.metadata?.name}: ${v.ok ? '' : v.errors.map(formatError).join('; ')}`,
      );
    }
  }
  assert.ok(seen >= 5, `only ${seen} gw.dev resources in examples/k8s`);
});

describe('runtime validation (controller and standalone loader)', () => {
  cases.forEach((c, i) => {
    test(`${c.file}: ${c.name}`, () => {
      const r = validateResource(resource(c, i));
      if (c.valid) {
        assert.ok(r.ok, r.ok ? '' : r.errors.map(formatError).join('\n'));
      } else {
        assert.ok(!r.ok, 'accepted, expected an error');
        const messages = r.errors.map(formatError);
        assert.ok(
          messages.some((m) => m.includes(c.error as string)),
          `expected an error containing\n  ${c.error}\ngot\n  ${messages.join('\n  ')}`,
        );
      }
    });
  });
});

/** POST with dryRun=All and strict field validation; returns the status code and the Status message. */
interface Answer {
  status: number;
  message: string;
  /** The stored spec, defaults applied, when the server accepted the object. */
  spec?: unknown;
}

function dryRunCreate(kube: KubeHarness, body: unknown, plural: string): Promise<Answer> {
  const url = new URL(
    `/apis/${GROUP}/${VERSION}/namespaces/default/${plural}?dryRun=All&fieldValidation=Strict`,
    kube.server,
  );
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        rejectUnauthorized: false,
        headers: {
          authorization: `Bearer ${kube.token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(data),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let message = text;
          let spec: unknown;
          try {
            const parsed = JSON.parse(text) as { message?: string; spec?: unknown };
            message = parsed.message ?? text;
            spec = parsed.spec;
          } catch {}
          resolve({ status: res.statusCode ?? 0, message, ...(spec === undefined ? {} : { spec }) });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

describe('the real API server with crds/ installed', () => {
  let kube: KubeHarness;
  const results = new Map<number, Answer>();
  before(async () => {
    kube = await startKube({ crdDirs: [join(root, 'crds')] });
    // all cases up front, a few at a time, so each test below only reads its answer
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const i = next++;
        const c = cases[i] as Case;
        results.set(i, await dryRunCreate(kube, resource(c, i), c.kind.plural));
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
  });
  after(async () => {
    await kube?.stop();
  });

  cases.forEach((c, i) => {
    test(`${c.file}: ${c.name}`, () => {
      const r = results.get(i);
      assert.ok(r, 'no answer');
      if (c.valid) {
        assert.equal(r.status, 201, r.message);
        // the API server's defaults and the runtime validator's defaults are the same
        const local = validateResource(resource(c, i));
        assert.ok(local.ok);
        assert.deepEqual(r.spec, local.spec);
      } else {
        assert.ok(r.status >= 400 && r.status < 500, `status ${r.status}: accepted, expected an error`);
        assert.ok(
          r.message.includes(c.error as string),
          `expected an error containing\n  ${c.error}\ngot\n  ${r.message}`,
        );
      }
    });
  });

  test('every example in examples/k8s applies cleanly with kubectl (server-side dry run)', async () => {
    const dir = join(root, 'examples/k8s');
    const r = await kube.kubectl(['apply', '--dry-run=server', '--server-side', '-f', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /serverside-applied \(server dry run\)/);
  });

  test('kubectl lists the kinds by short name and under the gw category', async () => {
    const r = await kube.kubectl(['api-resources', '--api-group', GROUP, '-o', 'wide']);
    assert.equal(r.code, 0, r.stderr);
    for (const k of KINDS) {
      assert.match(
        r.stdout,
        new RegExp(
          `^${k.plural}\\s+${k.shortNames.join(',')}\\s+${GROUP}/${VERSION}\\s+true\\s+${k.kind}\\s.*\\bgw\\b`,
          'm',
        ),
      );
    }
  });
});
