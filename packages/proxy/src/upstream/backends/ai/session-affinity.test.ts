// sessionAffinity on an ai backend: the official `openai` client through gw to three fake OpenAI
// providers in one priority group. Requests carrying the same session value reach the same provider;
// different values spread over all three; when a provider is ejected by its health policy only its
// sessions move, and they come back with it. The hashing itself (affinity.ts): weights hold, and
// taking a candidate away moves only the values it had.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FAKE_REPLY, type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { configIssues } from '../../../config/test-support.ts';
import { affinityKey, hashString, rendezvousScore } from '../affinity.ts';

const NAMES = ['p1', 'p2', 'p3'] as const;
type Name = (typeof NAMES)[number];
let providers: Record<Name, FakeOpenAI>;
let failing: Name | undefined;
let proxy: TestProxy;

before(async () => {
  const start = (name: Name) =>
    startFakeOpenAI({ name, answer: () => (failing === name ? { error: 500 } : undefined) });
  providers = { p1: await start('p1'), p2: await start('p2'), p3: await start('p3') };
  const provider = (n: Name) => `            - name: ${n}
              provider: {openAI: {model: m-${n}}}
              hostOverride: "127.0.0.1:${providers[n].port}"
              policies: {health: {eviction: {duration: 60s}}}`;
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - ai:
          groups:
          - providers:
${NAMES.map(provider).join('\n')}
        policies:
          sessionAffinity: {source: 'request.headers["x-session-id"]'}
`);
});

after(async () => {
  await proxy?.close();
  await Promise.all(Object.values(providers ?? {}).map((p) => p.close()));
});

const messages = [{ role: 'user' as const, content: 'Hello!' }];

/** Which provider served one chat completion with `session` (none: no header). */
async function servedBy(session?: string): Promise<Name | 'error'> {
  const before = NAMES.map((n) => providers[n].seen.length);
  const client = new OpenAI({
    apiKey: 'sk-client',
    baseURL: proxy.url('/v1'),
    maxRetries: 0,
    ...(session ? { defaultHeaders: { 'x-session-id': session } } : {}),
  });
  let ok = true;
  try {
    const r = await client.chat.completions.create({ model: 'gpt-4o', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
  } catch {
    ok = false;
  }
  const hit = NAMES.filter((n, i) => providers[n].seen.length > (before[i] as number));
  assert.equal(hit.length, 1, `one provider is called: ${hit.join(', ')}`);
  return ok ? (hit[0] as Name) : 'error';
}

describe('sessionAffinity on an ai backend', () => {
  const sessions = Array.from({ length: 30 }, (_, i) => `session-${i}`);
  const home = new Map<string, Name>();

  test('a session stays on one provider; sessions spread over all of them', async () => {
    for (const s of sessions) {
      const first = await servedBy(s);
      assert.notEqual(first, 'error');
      home.set(s, first as Name);
      for (let i = 0; i < 2; i++) assert.equal(await servedBy(s), first, `${s} stays on ${first}`);
    }
    const used = new Set(home.values());
    assert.deepEqual([...used].sort(), [...NAMES], 'each provider has sessions');
  });

  test('a request without the value is still served (balanced as usual)', async () => {
    assert.notEqual(await servedBy(), 'error');
  });

  test("an ejected provider's sessions move; the others stay; they come back with it", async () => {
    const onP2 = sessions.filter((s) => home.get(s) === 'p2');
    const elsewhere = sessions.filter((s) => home.get(s) !== 'p2');
    assert.ok(onP2.length > 0);
    failing = 'p2';
    // the first answer from p2 is unhealthy: it is ejected
    assert.equal(await servedBy(onP2[0]), 'error');
    failing = undefined;
    for (const s of onP2) {
      const now = await servedBy(s);
      assert.ok(now === 'p1' || now === 'p3', `${s} moved off p2 (to ${now})`);
      assert.equal(await servedBy(s), now, `${s} stays where it moved`);
    }
    for (const s of elsewhere) assert.equal(await servedBy(s), home.get(s), `${s} did not move`);
  });
});

describe('sessionAffinity refused where there is nothing to choose', () => {
  const load = (backend: string) =>
    configIssues(`binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - ${backend}\n`);
  test('a host backend, one provider, a bad expression', () => {
    assert.match(
      load('host: 127.0.0.1:1\n        policies: {sessionAffinity: {source: "1"}}'),
      /backends\[0\]\.policies\.sessionAffinity: sessionAffinity chooses among an ai backend's providers; a host backend has one endpoint/,
    );
    assert.match(
      load("ai: {name: a, provider: {openAI: {}}, policies: {sessionAffinity: {source: 'request.path'}}}"),
      /ai\.policies\.sessionAffinity: sessionAffinity chooses among an ai backend's providers: set it on the backend's policies/,
    );
    assert.match(
      load(
        "ai: {groups: [{providers: [{name: a, provider: {openAI: {}}}]}]}\n        policies: {sessionAffinity: {source: 'request.headers['}}",
      ),
      /policies\.sessionAffinity\.source: /,
    );
  });
});

describe('rendezvous hashing', () => {
  const pick = (key: string, names: readonly string[], weights: readonly number[]) => {
    const h = hashString(key);
    let best = -Infinity;
    let out = '';
    names.forEach((n, i) => {
      const s = rendezvousScore(h, hashString(n), weights[i] as number);
      if (s > best) {
        best = s;
        out = n;
      }
    });
    return out;
  };
  const keys = Array.from({ length: 20000 }, (_, i) => `user-${i}`);

  test('values spread in proportion to the weights', () => {
    const count: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (const k of keys)
      count[pick(k, ['a', 'b', 'c'], [1, 2, 1])] = (count[pick(k, ['a', 'b', 'c'], [1, 2, 1])] ?? 0) + 1;
    const share = (n: string) => (count[n] ?? 0) / keys.length;
    assert.ok(Math.abs(share('a') - 0.25) < 0.02, `a ${share('a')}`);
    assert.ok(Math.abs(share('b') - 0.5) < 0.02, `b ${share('b')}`);
    assert.ok(Math.abs(share('c') - 0.25) < 0.02, `c ${share('c')}`);
  });

  test('taking a candidate away moves only its values', () => {
    let moved = 0;
    for (const k of keys) {
      const before = pick(k, ['a', 'b', 'c', 'd'], [1, 1, 1, 1]);
      const afterwards = pick(k, ['a', 'b', 'd'], [1, 1, 1]);
      if (before !== 'c') assert.equal(afterwards, before, k);
      else moved++;
    }
    assert.ok(Math.abs(moved / keys.length - 0.25) < 0.02, `${moved} moved`);
  });

  test('the value: a string or bytes; anything else has none', () => {
    assert.equal(affinityKey('abc'), 'abc');
    assert.equal(affinityKey(new Uint8Array([1, 255])), '01ff');
    assert.equal(affinityKey(''), undefined);
    assert.equal(affinityKey(7n), undefined);
    assert.equal(affinityKey(undefined), undefined);
  });
});
