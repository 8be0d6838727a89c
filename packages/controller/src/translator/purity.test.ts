// Keeps the translator pure (ARCHITECTURE: "no clock, no network, no env"): its modules may import
// only each other and @gw/api, and may not name the clock, timers, randomness, the environment or
// the process. Tests, golden data and the golden runner are not part of it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));

function sources(d: string): string[] {
  return readdirSync(d, { withFileTypes: true }).flatMap((e) => {
    const p = join(d, e.name);
    if (e.isDirectory()) return e.name === 'testdata' ? [] : sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** The code without comments, and string/template literals emptied (their quotes kept). */
function codeOnly(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
    } else if (c === "'" || c === '"' || c === '`') {
      out += c;
      i++;
      while (i < text.length && text[i] !== c) {
        if (text[i] === '\\') i++;
        // a template's ${…} is code
        else if (c === '`' && text[i] === '$' && text[i + 1] === '{') {
          const end = text.indexOf('}', i);
          out += text.slice(i, end + 1);
          i = end;
        }
        i++;
      }
      out += c;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

const IMPORT =
  /\b(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|\bimport\s*['"]([^'"]+)['"]/g;
const FORBIDDEN: [RegExp, string][] = [
  [/\bDate\s*\.\s*now\b/, 'Date.now (the clock)'],
  [/\bnew\s+Date\b/, 'new Date (the clock)'],
  [/\bperformance\b/, 'performance (the clock)'],
  [/\bset(?:Timeout|Interval|Immediate)\b/, 'timers'],
  [/\bprocess\b/, 'process (env, argv, cwd …)'],
  [/\bMath\s*\.\s*random\b/, 'Math.random'],
  [/\bcrypto\b/, 'crypto (randomness)'],
  [/\bfetch\b/, 'fetch (the network)'],
  [/\brequire\b/, 'require'],
];

/** What is wrong with one translator module's source, if anything. */
function impurities(file: string, text: string): string[] {
  const problems: string[] = [];
  const code = codeOnly(text);
  // import specifiers live in the strings emptied above: read them from the text without comments
  const uncommented = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  for (const m of uncommented.matchAll(IMPORT)) {
    const spec = (m[1] ?? m[2] ?? m[3]) as string;
    if (spec.startsWith('.')) {
      const target = resolve(dirname(file), spec);
      if (relative(dir, target).startsWith('..')) problems.push(`imports ${spec}, outside the translator`);
    } else if (spec !== '@gw/api' && !spec.startsWith('@gw/api/')) {
      problems.push(`imports ${spec}: only @gw/api and the translator's own modules are allowed`);
    }
  }
  for (const [re, what] of FORBIDDEN) if (re.test(code)) problems.push(`uses ${what}`);
  return problems;
}

test('translator modules import only each other and @gw/api, and use no clock, env or IO', () => {
  const files = sources(dir);
  assert.ok(files.length > 20, `${files.length} modules found`);
  const found = files.flatMap((f) =>
    impurities(f, readFileSync(f, 'utf8')).map((p) => `${relative(dir, f)}: ${p}`),
  );
  assert.deepEqual(found, []);
});

test('the guard catches what it is for', () => {
  const f = join(dir, 'example.ts');
  assert.deepEqual(impurities(f, "import fs from 'node:fs';"), [
    "imports node:fs: only @gw/api and the translator's own modules are allowed",
  ]);
  assert.deepEqual(impurities(f, "import { x } from '../xds/server.ts';"), [
    'imports ../xds/server.ts, outside the translator',
  ]);
  assert.equal(impurities(f, "const k = await import('@kubernetes/client-node');").length, 1);
  assert.deepEqual(impurities(f, 'const t = Date.now();'), ['uses Date.now (the clock)']);
  assert.deepEqual(impurities(f, 'const d = new Date();'), ['uses new Date (the clock)']);
  assert.deepEqual(impurities(f, "const e = process.env['X'];"), ['uses process (env, argv, cwd …)']);
  assert.deepEqual(impurities(f, 'setTimeout(() => {}, 1);'), ['uses timers']);
  // words in comments and strings are not code
  assert.deepEqual(impurities(f, "// no Date.now here\nconst s = 'process.env and new Date';"), []);
  assert.deepEqual(
    impurities(f, "import type { Problem } from '@gw/api';\nimport { ok } from './conditions.ts';"),
    [],
  );
});
