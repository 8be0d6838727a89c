// Keeps every package free of import cycles (type-only imports included): a cycle is where modules
// start to grow into each other, and it makes load order matter.
import assert from 'node:assert/strict';
import { globSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]/g;

function graphOf(pkg: string): Map<string, string[]> {
  const files = globSync('src/**/*.ts', { cwd: join(root, 'packages', pkg) }).filter(
    (f) => !f.endsWith('.test.ts'),
  );
  const g = new Map<string, string[]>();
  for (const f of files) {
    const src = readFileSync(join(root, 'packages', pkg, f), 'utf8');
    g.set(
      f,
      [...src.matchAll(IMPORT)].map((m) => normalize(join(dirname(f), m[1] as string))),
    );
  }
  return g;
}

/** Strongly connected components of more than one module (Tarjan). */
function cycles(g: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  let n = 0;
  const visit = (v: string) => {
    index.set(v, n);
    low.set(v, n++);
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return out;
}

for (const pkg of ['api', 'proxy', 'controller', 'gwctl', 'testkit', 'guardrail-sdk']) {
  test(`@gw/${pkg} has no import cycles`, () => {
    const g = graphOf(pkg);
    assert.ok(g.size > 3, `found the sources of ${pkg}`);
    assert.deepEqual(cycles(g), []);
  });
}

test('the cycle finder finds a cycle', () => {
  const g = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['a.ts']],
  ]);
  assert.deepEqual(cycles(g), [['a.ts', 'b.ts', 'c.ts']]);
});
