import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { type EscapedSlashes, normalizePath, type PathNormalization } from './normalize-path.ts';

const DEFAULTS: PathNormalization = { mergeSlashes: true, escapedSlashes: 'KeepUnchanged' };

function norm(path: string, opts: Partial<PathNormalization> = {}): string {
  const r = normalizePath(path, { ...DEFAULTS, ...opts });
  return r.ok ? r.path : `refused: ${r.reason}`;
}

describe('normalizePath', () => {
  test('plain paths come back unchanged', () => {
    for (const p of ['/', '/a', '/a/b/', '/files/admin/secret.txt', '/.well-known/x', '/a.b/c..d/...']) {
      assert.equal(norm(p), p);
    }
  });

  test('dot segments are removed as RFC 3986 §5.2.4 says', () => {
    const cases: [string, string][] = [
      ['/files/public/../admin/secret.txt', '/files/admin/secret.txt'],
      ['/a/./b', '/a/b'],
      ['/a/b/.', '/a/b/'],
      ['/a/b/..', '/a/'],
      ['/..', '/'],
      ['/../../a', '/a'],
      ['/a/../../b/./c/..', '/b/'],
      ['/.', '/'],
    ];
    for (const [input, want] of cases) assert.equal(norm(input), want, input);
  });

  test('escapes of unreserved characters are decoded; other escapes get upper-case hex', () => {
    assert.equal(norm('/files/%61dmin/'), '/files/admin/');
    assert.equal(norm('/%7euser/%2D%5f'), '/~user/-_');
    assert.equal(norm('/a%20b/%c3%a9'), '/a%20b/%C3%A9');
    assert.equal(norm('/%25%32%65'), '/%252e', 'an escaped % is not decoded, so nothing is decoded twice');
  });

  test('escaped dots are dot segments', () => {
    assert.equal(norm('/files/public/%2e%2e/admin/secret.txt'), '/files/admin/secret.txt');
    assert.equal(norm('/files/public/.%2E/admin'), '/files/admin');
    assert.equal(norm('/files/%2e/admin'), '/files/admin');
  });

  test('runs of slashes merge by default, and stay when mergeSlashes is false', () => {
    assert.equal(norm('/files//admin/'), '/files/admin/');
    assert.equal(norm('//files///admin//'), '/files/admin/');
    assert.equal(norm('/files//admin/', { mergeSlashes: false }), '/files//admin/');
    assert.equal(norm('/a//..', { mergeSlashes: false }), '/a/');
  });

  test('a raw backslash is a slash', () => {
    assert.equal(norm('/files\\admin\\secret.txt'), '/files/admin/secret.txt');
    assert.equal(norm('/files/public\\..\\admin'), '/files/admin');
  });

  test('escaped slashes: kept (hex upper-cased), refused, or decoded and normalised', () => {
    assert.equal(norm('/repos/group%2fproject/%5c'), '/repos/group%2Fproject/%5C');
    assert.equal(
      norm('/repos/group%2Fproject', { escapedSlashes: 'RejectRequest' }),
      'refused: escaped slash (%2F or %5C) in path',
    );
    assert.equal(norm('/plain/path', { escapedSlashes: 'RejectRequest' }), '/plain/path');
    const fwd = { escapedSlashes: 'UnescapeAndForward' as const };
    assert.equal(norm('/repos/group%2Fproject', fwd), '/repos/group/project');
    assert.equal(norm('/files/public/..%2fadmin/secret.txt', fwd), '/files/admin/secret.txt');
    assert.equal(norm('/files/public%5C..%5Cadmin', fwd), '/files/admin');
    assert.equal(norm('/files%2F%2Fadmin', fwd), '/files/admin');
  });

  test('under KeepUnchanged a dot segment behind an escaped slash is refused', () => {
    for (const p of [
      '/files/public/..%2fadmin/secret.txt',
      '/files/public%2F..%2Fadmin',
      '/a/.%5Cb',
      '/a/%2e%2e%2fb',
    ]) {
      assert.equal(norm(p), 'refused: dot segment behind an escaped slash in path', p);
    }
    assert.equal(norm('/a/b%2F...%2Fc'), '/a/b%2F...%2Fc', 'three dots are a name');
  });

  test('malformed targets are refused', () => {
    assert.equal(norm('/a%zz'), 'refused: invalid percent-encoding in path');
    assert.equal(norm('/a%2'), 'refused: invalid percent-encoding in path');
    assert.equal(norm('/a#frag'), 'refused: request target has a fragment');
    assert.equal(norm('*'), 'refused: request path must start with /');
    assert.equal(norm(''), 'refused: request path must start with /');
  });
});

// ---------- properties ----------

const MODES: EscapedSlashes[] = ['KeepUnchanged', 'RejectRequest', 'UnescapeAndForward'];
const options = fc.record({
  mergeSlashes: fc.boolean(),
  escapedSlashes: fc.constantFrom(...MODES),
});

/** Path pieces chosen to hit the interesting cases: dots, escapes of every kind, slashes, backslashes. */
const piece = fc.oneof(
  fc.constantFrom('.', '..', '...', '', 'a', 'files', 'admin', '~', '-', '%2e', '%2E%2e', '%2f', '%2F'),
  fc.constantFrom('%5c', '%5C', '%61', '%41dmin', '%20', '%c3%a9', '%25', '%252e', '\\', '/', '//', '@'),
  fc.stringMatching(/^[a-z0-9._~-]{1,6}$/),
);
// Pieces are joined with nothing between them, so `..` meets `%2F` as often as it meets `/`.
const rawPath = fc.array(fc.oneof(piece, fc.constant('/')), { maxLength: 16 }).map((ps) => `/${ps.join('')}`);
const RUNS = { numRuns: 2000 };

/** Segments that, put anywhere before the last segment, leave the path's meaning unchanged. */
const DETOURS: Record<string, string[]> = {
  dot: ['.'],
  encdot: ['%2E'],
  updown: ['public', '..'],
  encdots: ['x', '%2e%2E'],
};

describe('normalizePath properties', () => {
  test('normalising twice changes nothing more', () => {
    fc.assert(
      fc.property(rawPath, options, (p, o) => {
        const once = normalizePath(p, o);
        if (!once.ok) return;
        const twice = normalizePath(once.path, o);
        assert.deepEqual(twice, once);
      }),
      RUNS,
    );
  });

  test('the result starts with / and has no . or .. segment, even once escaped slashes are decoded', () => {
    fc.assert(
      fc.property(rawPath, options, (p, o) => {
        const r = normalizePath(p, o);
        if (!r.ok) return;
        assert.ok(r.path.startsWith('/'), r.path);
        const decoded = r.path.replace(/%2F|%5C/g, '/');
        for (const s of decoded.split('/')) assert.ok(s !== '.' && s !== '..', `${p} → ${r.path}`);
        if (o.mergeSlashes) assert.ok(!r.path.includes('//'), `${p} → ${r.path}`);
      }),
      RUNS,
    );
  });

  test('under KeepUnchanged %2F is never decoded: it behaves as an opaque character', () => {
    // `@` stands in for %2F: it is never produced by decoding (%40 stays escaped).
    const opts = { mergeSlashes: true, escapedSlashes: 'KeepUnchanged' as const };
    const noAt = rawPath.filter((p) => !p.includes('@'));
    fc.assert(
      fc.property(noAt, (p) => {
        const r = normalizePath(p, opts);
        if (!r.ok) return;
        const stand = normalizePath(p.replace(/%2f/gi, '@'), opts);
        assert.ok(stand.ok);
        assert.equal(r.path.replaceAll('%2F', '@'), stand.path, p);
      }),
      RUNS,
    );
  });

  test('every spelling of a protected path normalises to that path', () => {
    const protectedPrefix = '/files/admin';
    const name = fc.stringMatching(/^[a-z0-9._~-]{1,8}$/).filter((s) => s !== '.' && s !== '..');
    const target = fc.array(name, { minLength: 0, maxLength: 4 }).map((ns) => [...ns]);
    // Each step turns one segment list into another that must mean the same path.
    const spelling = fc.record({
      encode: fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
      lowerHex: fc.boolean(),
      detours: fc.array(fc.constantFrom('dot', 'encdot', 'updown', 'encdots', 'double', 'backslash'), {
        maxLength: 6,
      }),
      at: fc.array(fc.nat(), { minLength: 6, maxLength: 6 }),
    });
    fc.assert(
      fc.property(target, spelling, options, (rest, s, o) => {
        // The last segment is a name, so no detour ends the path (`/a/.` is the directory `/a/`).
        const segs = ['files', 'admin', ...rest, 'secret.txt'];
        // Percent-encode some unreserved characters.
        let k = 0;
        const enc = (seg: string) =>
          [...seg]
            .map((ch) => {
              if (!s.encode[k++ % s.encode.length]) return ch;
              const hex = ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0');
              return `%${s.lowerHex ? hex.toLowerCase() : hex}`;
            })
            .join('');
        const parts: string[] = segs.map(enc);
        const seps: string[] = parts.map(() => '/');
        s.detours.forEach((d, i) => {
          const pos = (s.at[i] ?? 0) % parts.length;
          const inserted = DETOURS[d];
          if (inserted) {
            parts.splice(pos, 0, ...inserted);
            seps.splice(pos, 0, ...inserted.map(() => '/'));
          } else if (d === 'double' && o.mergeSlashes) seps[pos % seps.length] = '//';
          // A target must start with `/`: only later slashes become backslashes.
          else if (d === 'backslash') seps[1 + (pos % (seps.length - 1))] = '\\';
        });
        const sent = parts.map((p, i) => `${seps[i]}${p}`).join('');
        const r = normalizePath(sent, o);
        assert.ok(r.ok, `${sent} refused`);
        const want = `/${segs.join('/')}`;
        assert.equal(r.path, want, sent);
        assert.ok(r.path === protectedPrefix || r.path.startsWith(`${protectedPrefix}/`));
      }),
      RUNS,
    );
  });
});
