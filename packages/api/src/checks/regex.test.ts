// Patterns written for agentgateway (Rust's regex crate) work unchanged: what that dialect spells
// differently is rewritten into JavaScript's, with the same meaning, and a flag JavaScript cannot
// express is refused by name.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkRegex, jsRegex, userRegExp } from './regex.ts';

/** Whether `pattern` matches all of `text`, as a route's regex match tests it. */
const whole = (pattern: string, text: string) => userRegExp(pattern, '', true).test(text);

describe("Rust's regex dialect", () => {
  test('a leading (?i) makes the whole pattern case-insensitive, alternatives included', () => {
    assert.ok(whole('(?i)I\\s+have\\s+been\\s+PWNED', 'i HAVE been pwned'));
    assert.ok(whole('(?i)foo|bar', 'BAR'));
    assert.ok(!whole('foo|bar', 'BAR'));
  });

  test('an inline flag reaches the end of its group, and across a | in it', () => {
    assert.ok(whole('a(?i)b|c', 'aB'));
    assert.ok(whole('a(?i)b|c', 'C'));
    assert.ok(!whole('a(?i)b|c', 'AB'));
    assert.ok(whole('(a(?i)b)c', 'aBc'));
    assert.ok(!whole('(a(?i)b)c', 'aBC'));
    assert.ok(whole('(?i)a(?-i)b', 'Ab'));
    assert.ok(!whole('(?i)a(?-i)b', 'AB'));
    assert.ok(whole('(?s)a.b', 'a\nb'));
  });

  test('named groups, text anchors, ASCII classes and a ] first in a class', () => {
    const m = userRegExp('(?P<user>[[:alpha:]]+)@(?P<host>[[:alnum:].-]+)').exec('alice@mx1.example');
    assert.equal(m?.groups?.user, 'alice');
    assert.equal(m?.groups?.host, 'mx1.example');
    assert.ok(whole('\\Aab\\z', 'ab'));
    assert.ok(whole('[[:digit:]]{3}', '123'));
    assert.ok(!whole('[[:digit:]]{3}', '12a'));
    assert.ok(whole('[]x]+', ']x]'));
    assert.ok(whole('[^]x]', 'a'));
  });

  test('JavaScript patterns pass unchanged; escapes and classes are not rewritten', () => {
    for (const p of [
      '^/api/v[0-9]+/.*$',
      'a\\(\\?i\\)b',
      '[(?i)]',
      '(?:x|y)+',
      '(?<n>z)',
      '\\\\A',
      // JavaScript's own spellings, which Rust reads otherwise or refuses, keep their JavaScript meaning
      'a\\-b',
      '[\\b]',
      '[\\w-.]+',
      '\\uD83D\\uDE00',
      'x}',
    ])
      assert.deepEqual(jsRegex(p), { source: p, flags: '' });
    assert.ok(whole('a\\(\\?i\\)b', 'a(?i)b'));
  });

  test('a flag JavaScript has no form of is named; an invalid pattern is still refused', () => {
    assert.deepEqual(checkRegex('(?x) a b', ['p']), [
      { path: ['p'], message: 'invalid regular expression: the inline flag x of (?x) cannot be used here' },
    ]);
    assert.match(checkRegex('(?U)a+', ['p'])[0]?.message ?? '', /inline flag U/);
    assert.match(checkRegex('(?i)(a', ['p'])[0]?.message ?? '', /invalid regular expression: .*/);
  });
});

describe("Rust's Unicode classes, code points and class operations", () => {
  test('\\p{…}, \\pL and \\P{…} match as in Rust (compiled with the u flag)', () => {
    assert.ok(whole('/u/\\p{L}+', '/u/abcé'));
    assert.ok(!whole('/u/\\p{L}+', '/u/p{L}'));
    assert.ok(whole('/s/\\pL+', '/s/abc'));
    assert.ok(!whole('/s/\\pL+', '/s/a1'));
    assert.ok(whole('\\P{L}+', '12'));
    assert.ok(!whole('\\P{L}', 'a'));
    assert.equal(jsRegex('\\pL').flags, 'u');
    // Rust's loose names: a script by its name, case and spaces aside, name:value and !=
    assert.ok(whole('\\p{greek}', 'α'));
    assert.ok(whole('\\p{isGreek}', 'α'));
    assert.ok(whole('\\p{sc=Grek}', 'α'));
    assert.ok(whole('\\p{Uppercase Letter}', 'A'));
    assert.ok(whole('\\p{gc:Lu}', 'A'));
    assert.ok(whole('\\p{gc!=L}', '1'));
    assert.ok(!whole('\\p{gc!=L}', 'a'));
    assert.ok(whole('(?i)\\p{Lu}', 'a'));
  });

  test('\\x{…}, \\u{…} and \\U… are code points; one past U+FFFF is one character', () => {
    assert.ok(whole('/h/\\x{41}', '/h/A'));
    assert.ok(!whole('/h/\\x{41}', '/h/x{41}'));
    assert.ok(whole('\\u{42}\\U00000043\\U{44}\\x45', 'BCDE'));
    assert.deepEqual(jsRegex('\\x{41}'), { source: '\\u0041', flags: '' });
    assert.ok(whole('\\x{1F600}+', '😀😀'));
    assert.ok(whole('[\\x{1F600}-\\x{1F64F}]', '😃'));
    assert.ok(whole('😀+', '😀😀'));
  });

  test('class intersection, difference, symmetric difference and nested classes (the v flag)', () => {
    assert.ok(whole('/c/[a-z&&[^b]]', '/c/a'));
    assert.ok(!whole('/c/[a-z&&[^b]]', '/c/b'));
    assert.ok(!whole('/c/[a-z&&[^b]]', '/c/&'));
    assert.equal(jsRegex('[a-z&&[^b]]').flags, 'v');
    assert.ok(whole('[\\pL--[a-c]]', 'd'));
    assert.ok(!whole('[\\pL--[a-c]]', 'a'));
    assert.ok(whole('[a-c~~b-d]', 'a'));
    assert.ok(whole('[a-c~~b-d]', 'd'));
    assert.ok(!whole('[a-c~~b-d]', 'b'));
    assert.ok(whole('[a[bc]]+', 'abc'));
    assert.ok(!whole('[a[bc]]', ']'));
    assert.ok(!whole('(?i)[a-z&&[^b]]', 'B'));
    assert.ok(whole('[[:word:]&&[^_]]', 'a'));
    assert.ok(!whole('[[:word:]&&[^_]]', '_'));
    // an empty operand, as Rust reads it
    assert.ok(whole('[+--]', '+'));
    assert.ok(!whole('[+--]', ','));
    assert.ok(!whole('[&&a]', 'a'));
  });

  test('more of what Rust reads otherwise than JavaScript without a flag', () => {
    assert.ok(whole('[[:^alpha:]]', '1'));
    assert.ok(!whole('[[:^alpha:]]', 'a'));
    assert.ok(whole('[--a]', '-'));
    assert.ok(!whole('[--a]', 'b'), 'leading dashes are literals, not a range');
    assert.ok(whole('a{2, 3}', 'aaa'));
    assert.ok(whole('\\<x\\>', 'x'));
    assert.ok(!whole('a\\<x', 'ax'));
    assert.ok(whole('\\b{start}x\\b{end}', 'x'));
    assert.ok(whole('\\a', '\x07'));
    // with the u flag, punctuation escapes and a lone } or ] stay literals
    assert.ok(whole('\\p{L}\\-\\#\\&\\~\\ \\}}]', 'a-#&~ }}]'));
    assert.ok(whole('\\p{L}[\\-\\&&&[\\-]]', 'a-'));
  });

  test('what has no JavaScript form is refused, naming it', () => {
    assert.deepEqual(checkRegex('/a/\\p{Age=3.0}', ['m', 'path', 'regex']), [
      {
        path: ['m', 'path', 'regex'],
        message: 'invalid regular expression: \\p{Age=3.0}: JavaScript has no Unicode property "Age"',
      },
    ]);
    assert.match(
      checkRegex('\\p{L&}', ['p'])[0]?.message ?? '',
      /\\p\{L&\}: not a Unicode property JavaScript knows/,
    );
    assert.match(checkRegex('[\\p{Nope}]', ['p'])[0]?.message ?? '', /\\p\{Nope\}: not a Unicode property/);
    assert.match(
      checkRegex('\\x{D800}', ['p'])[0]?.message ?? '',
      /\\x\{D800\} is not a Unicode scalar value/,
    );
    assert.match(checkRegex('\\p{L}[a', ['p'])[0]?.message ?? '', /unclosed character class/);
  });
});
