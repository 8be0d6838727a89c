// The spec's decision table, exhaustively: every combination of (Deny matched?, Require held?,
// Allow rules present?, an Allow matched?) for each number of rules of each kind.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileRules, decide } from './decision.ts';

const T = 'request.path == "/x"';
const F = 'request.path == "/nope"';
const ctx = { request: { path: '/x' } };

type Case = { deny: boolean[]; require: boolean[]; allow: boolean[] };
function* cases(): Generator<Case> {
  const lists = [[], [false], [true], [false, false], [false, true], [true, true]] as boolean[][];
  for (const deny of lists)
    for (const require of lists) for (const allow of lists) yield { deny, require, allow };
}

function expected(c: Case): boolean {
  if (c.deny.some(Boolean)) return false; // 1: any Deny matches
  if (c.require.some((v) => !v)) return false; // 2: any Require is false
  if (c.allow.length > 0 && !c.allow.some(Boolean)) return false; // 3: Allows exist, none matched
  return true; // 4: otherwise
}

test('every combination of Deny / Require / Allow outcomes follows the decision table', () => {
  let n = 0;
  for (const c of cases()) {
    const rules = compileRules({
      rules: [
        ...c.deny.map((v) => ({ deny: v ? T : F })),
        ...c.require.map((v) => ({ require: v ? T : F })),
        ...c.allow.map((v) => ({ allow: v ? T : F })),
      ],
    });
    assert.equal(decide(rules, ctx).allowed, expected(c), JSON.stringify(c));
    n++;
  }
  assert.equal(n, 216);
});

test('Deny wins over a matching Allow; a Require-only policy allows what satisfies it', () => {
  assert.equal(decide(compileRules({ rules: [{ allow: T }, { deny: T }] }), ctx).allowed, false);
  assert.equal(
    decide(compileRules({ action: 'Require', policy: { matchExpressions: [T] } }), ctx).allowed,
    true,
  );
});

test('blocks from several policies combine; a bare string rule is an Allow', () => {
  const rules = compileRules([{ rules: [F] }, { action: 'Allow', policy: { matchExpressions: [T] } }]);
  assert.equal(decide(rules, ctx).allowed, true);
  const denied = compileRules([{ rules: [T] }, { action: 'Deny', policy: { matchExpressions: [T] } }]);
  assert.deepEqual(decide(denied, ctx), { allowed: false, reason: `denied by rule: ${T}` });
});

test('jwt with no JWT context is no match: denies under Allow, fails a Require, does not trigger a Deny', () => {
  const j = 'jwt.sub == "u1"';
  assert.equal(decide(compileRules({ rules: [{ allow: j }] }), ctx).allowed, false);
  assert.equal(decide(compileRules({ rules: [{ require: j }] }), ctx).allowed, false);
  assert.equal(decide(compileRules({ rules: [{ deny: j }] }), ctx).allowed, true);
  assert.equal(decide(compileRules({ rules: [{ allow: j }] }), { ...ctx, jwt: { sub: 'u1' } }).allowed, true);
});
