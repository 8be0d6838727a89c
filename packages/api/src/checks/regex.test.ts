// Patterns written for agentgateway (Rust's regex crate) work unchanged: what that dialect spells
// differently is rewritten into JavaScript's, with the same meaning, and a flag JavaScript cannot
// express is refused by name.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkRegex, jsRegexSource, userRegExp } from './regex.ts';

/** Whether `pattern` matches all of `text`, as a route's regex match tests it. */
const whole = (pattern: string, text: string) => new RegExp(`^(?:${jsRegexSource(pattern)})$`).test(text);

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
    for (const p of ['^/api/v[0-9]+/.*$', 'a\\(\\?i\\)b', '[(?i)]', '(?:x|y)+', '(?<n>z)', '\\\\A'])
      assert.equal(jsRegexSource(p), p);
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
