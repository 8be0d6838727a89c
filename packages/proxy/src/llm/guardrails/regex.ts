// The regex guard: built-in detectors and configured patterns, compiled once per model. Mask replaces
// each match (a detector's placeholder, or `<name>` / `<MASKED>` for a pattern), Reject and Audit stop
// at the first match. Only the texts handed in are scanned, never the JSON around them.
import { GUARD_REGEX_FLAGS, userRegExp } from '@gw/api/runtime';
import type { LlmGuardIR } from '../../config/ir.ts';
import { BUILTINS, type Detector } from './builtins.ts';
import type { CompiledGuard, GuardKindModule, GuardVerdict } from './types.ts';

interface Rule extends Detector {
  name: string;
}

function compileRules(ir: LlmGuardIR<'regex'>): Rule[] {
  return ir.settings.rules.map((r) => {
    if ('builtin' in r) {
      const b = BUILTINS[r.builtin];
      // A fresh RegExp per guard: lastIndex is state.
      return { ...b, re: new RegExp(b.re.source, b.re.flags), name: r.builtin };
    }
    return {
      re: userRegExp(r.pattern, GUARD_REGEX_FLAGS),
      mask: `<${r.name ?? 'MASKED'}>`,
      name: r.name ?? r.pattern,
    };
  });
}

/** The first valid match of `rule` in `text` ending after `from`, as its end; -1 when none. */
function firstEnd(rule: Rule, text: string, from: number): number {
  if (rule.needs !== undefined && !text.includes(rule.needs)) return -1;
  const re = rule.re;
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m[0] === '') {
      re.lastIndex++;
      continue;
    }
    const end = m.index + m[0].length;
    if (end > from && (!rule.valid || rule.valid(m[0]))) return end;
  }
  return -1;
}

function maskAll(rule: Rule, text: string): string {
  if (rule.needs !== undefined && !text.includes(rule.needs)) return text;
  rule.re.lastIndex = 0;
  return text.replace(rule.re, (m) => (rule.valid && !rule.valid(m) ? m : rule.mask));
}

export const regexGuard: GuardKindModule<'regex'> = {
  compile(ir): CompiledGuard {
    const rules = compileRules(ir);
    const action = ir.settings.action;
    return {
      ir,
      check({ texts }): GuardVerdict {
        if (action === 'mask') {
          let first: string | undefined;
          const changed = new Map<number, string>();
          texts.forEach((t, i) => {
            let out = t;
            for (const r of rules) {
              const next = maskAll(r, out);
              if (next !== out) first ??= r.name;
              out = next;
            }
            if (out !== t) changed.set(i, out);
          });
          return first === undefined ? { action: 'pass' } : { action: 'mask', rule: first, texts: changed };
        }
        for (const t of texts)
          for (const r of rules) if (firstEnd(r, t, 0) !== -1) return { action, rule: r.name };
        return { action: 'pass' };
      },
      stream: {
        action,
        scan(text, from) {
          for (const r of rules) {
            const end = firstEnd(r, text, from);
            if (end !== -1) return { rule: r.name, end };
          }
          return undefined;
        },
      },
    };
  },
};
