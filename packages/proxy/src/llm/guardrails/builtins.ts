// The built-in detectors of the regex guard: a pattern each, and for card and SIN numbers the Luhn
// check that keeps arbitrary digit runs from matching. Patterns are compiled once, here.
import type { LlmBuiltinDetector } from '../../config/ir.ts';

export interface Detector {
  /** Global regular expression: the candidates. */
  re: RegExp;
  /** A candidate is a finding only when this holds (default: always). */
  valid?: (match: string) => boolean;
  /** What a masked match becomes. */
  mask: string;
  /** A text without this cannot match: skipped without running the expression. */
  needs?: string;
}

/** Whether the digits of `s` (other characters ignored) pass the Luhn checksum. */
export function luhn(s: string): boolean {
  let sum = 0;
  let double = false;
  let n = 0;
  for (let i = s.length - 1; i >= 0; i--) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) continue;
    n++;
    let d = c;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return n > 0 && sum % 10 === 0;
}

const digitCount = (s: string) => s.replace(/\D/g, '').length;

export const BUILTINS: Record<LlmBuiltinDetector, Detector> = {
  // US SSN: area not 000, 666 or 9xx, group not 00, serial not 0000; dashes or spaces, used alike.
  ssn: { re: /\b(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}\b/g, mask: '<SSN>' },
  // 13 to 19 digits, optionally grouped by spaces or dashes, passing Luhn.
  creditCard: {
    re: /\b\d(?:[ -]?\d){12,18}\b/g,
    valid: (m) => {
      const n = digitCount(m);
      return n >= 13 && n <= 19 && luhn(m);
    },
    mask: '<CREDIT_CARD>',
  },
  // North American numbers (+1 optional, area code in parentheses or not) and +<country> numbers.
  phoneNumber: {
    re: /(?<![\w+])(?:(?:\+?1[ .-]?)?(?:\(\d{3}\)|\d{3})[ .-]?\d{3}[ .-]?\d{4}|\+\d{1,3}(?:[ .-]?\d{2,4}){2,4})(?!\w)/g,
    mask: '<PHONE_NUMBER>',
  },
  email: {
    re: /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g,
    mask: '<EMAIL_ADDRESS>',
    needs: '@',
  },
  // Canadian SIN: nine digits in groups of three, passing Luhn.
  caSin: { re: /\b\d{3}([- ]?)\d{3}\1\d{3}\b/g, valid: luhn, mask: '<CA_SIN>' },
};
