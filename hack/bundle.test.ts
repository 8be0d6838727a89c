// hack/bundle.ts: the chunks of older builds go once no build has written them for a day; this
// build's files, recent ones and the non-JavaScript files stay.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeHttpShim, removeOldChunks, toLatin1 } from './bundle.ts';

test('a build removes the chunks it did not write that are older than the cut-off, and nothing else', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bundle-'));
  try {
    const now = Date.now();
    const dayAgo = (now - 25 * 3600_000) / 1000;
    const files: Record<string, number> = {
      'chunk-OLD.js': dayAgo, // an older build's, not rewritten since: goes
      'chunk-OLD.js.map': dayAgo,
      'stream-OLD.js': dayAgo, // a lazily loaded chunk, named after its module: goes too
      'chunk-RECENT.js': now / 1000, // an older build's of an hour ago: a running proxy may need it
      'chunk-KEPT.js': dayAgo, // this build's (esbuild may leave an unchanged file as it was)
      'gw.js': dayAgo, // an entry, which every build writes
      'package.json': dayAgo,
    };
    for (const [name, at] of Object.entries(files)) {
      writeFileSync(join(dir, name), '');
      utimesSync(join(dir, name), at, at);
    }
    const removed = removeOldChunks(
      dir,
      new Set([join(dir, 'chunk-KEPT.js'), join(dir, 'gw.js')]),
      now - 24 * 3600_000,
    );
    assert.deepEqual(removed.sort(), ['chunk-OLD.js', 'chunk-OLD.js.map', 'stream-OLD.js']);
    assert.deepEqual(readdirSync(dir).sort(), ['chunk-KEPT.js', 'chunk-RECENT.js', 'gw.js', 'package.json']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('comment lines of the bundle are made Latin-1 without moving a column; code lines are not touched', () => {
  const src = [
    '/** The provider → its model list … */',
    '  // one write(2) each — a data-plane worker',
    '   * a trailing 😀 line',
    'const unit = /(ns|µs|→)$/; // a regex keeps its arrow',
    'const s = "\\u2192";',
  ].join('\n');
  const out = toLatin1(src).split('\n');
  assert.deepEqual(out, [
    '/** The provider > its model list . */',
    '  // one write(2) each - a data-plane worker',
    '   * a trailing ?? line',
    'const unit = /(ns|µs|→)$/; // a regex keeps its arrow',
    'const s = "\\u2192";',
  ]);
  for (const [i, line] of src.split('\n').entries()) assert.equal(out[i]?.length, line.length);
});

test('the node:http shim re-exports plain values and leaves accessors (the lazy undici getters) out', () => {
  const reads: string[] = [];
  const fake = { IncomingMessage: class {}, STATUS_CODES: {}, 'not-a-name': 1 };
  Object.defineProperty(fake, 'WebSocket', {
    enumerable: true,
    get: () => {
      reads.push('WebSocket');
      return class {};
    },
  });
  const shim = nodeHttpShim(fake);
  assert.deepEqual(reads, [], 'building the shim read no getter');
  assert.match(shim, /^export const IncomingMessage = http\.IncomingMessage;$/m);
  assert.match(shim, /^export const STATUS_CODES = http\.STATUS_CODES;$/m);
  assert.match(shim, /^export default http;$/m);
  assert.doesNotMatch(shim, /WebSocket|not-a-name/);
  // Against Node's own module: the getters that load its internal undici are not in it.
  const real = nodeHttpShim(process.getBuiltinModule('node:http'));
  assert.match(real, /^export const Server = http\.Server;$/m);
  assert.doesNotMatch(real, /WebSocket|CloseEvent|MessageEvent/);
});
