// The authorization decision of the spec ("Request authorization decision"): Deny wins, then every
// Require must hold, then, if any Allow rule exists, one must match; otherwise the request proceeds.
// An expression that cannot be evaluated (e.g. `jwt.sub` with no JWT) counts as not matching.
import type { Authorization } from '@gw/api';
import { type CelContext, type CelProgram, celTrue, compileCel } from '../../cel/cel.ts';

export type Action = 'allow' | 'deny' | 'require';
export interface Rule {
  action: Action;
  expr: CelProgram;
}

export type Decision = { allowed: true } | { allowed: false; reason: string };

/** Rules of one or more authorization blocks; they accumulate across policies. */
export function compileRules(blocks: Authorization | Authorization[]): Rule[] {
  const out: Rule[] = [];
  for (const b of Array.isArray(blocks) ? blocks : [blocks]) {
    if ('rules' in b) {
      for (const r of b.rules) {
        if (typeof r === 'string') out.push({ action: 'allow', expr: compileCel(r) });
        else if ('allow' in r) out.push({ action: 'allow', expr: compileCel(r.allow) });
        else if ('deny' in r) out.push({ action: 'deny', expr: compileCel(r.deny) });
        else out.push({ action: 'require', expr: compileCel(r.require) });
      }
    } else {
      const action = (b.action ?? 'Allow').toLowerCase() as Action;
      for (const e of b.policy.matchExpressions) out.push({ action, expr: compileCel(e) });
    }
  }
  return out;
}

/** Pure: the same rules and context always give the same decision. */
export function decide(rules: readonly Rule[], ctx: CelContext): Decision {
  for (const r of rules) {
    if (r.action === 'deny' && celTrue(r.expr, ctx))
      return { allowed: false, reason: `denied by rule: ${r.expr.source}` };
  }
  for (const r of rules) {
    if (r.action === 'require' && !celTrue(r.expr, ctx))
      return { allowed: false, reason: `required rule not met: ${r.expr.source}` };
  }
  let anyAllow = false;
  for (const r of rules) {
    if (r.action !== 'allow') continue;
    anyAllow = true;
    if (celTrue(r.expr, ctx)) return { allowed: true };
  }
  return anyAllow ? { allowed: false, reason: 'no allow rule matched' } : { allowed: true };
}
