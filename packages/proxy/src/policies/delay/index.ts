// delay (fault injection): waits before forwarding. The duration is a duration string or a CEL
// expression giving a duration or milliseconds; a non-positive result injects nothing. The wait counts
// against the request timeout.
import { setTimeout as sleep } from 'node:timers/promises';
import { parseGoDuration } from '@gw/api/runtime';
import { type CelProgram, celDurationMs, celTrue, compileCel } from '../../cel/cel.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { PolicyDefinition } from '../types.ts';

type Rule = { condition: CelProgram | undefined; duration: (ctx: RequestContext) => number };

function durationOf(text: string): (ctx: RequestContext) => number {
  const fixed = parseGoDuration(text);
  if (fixed !== undefined) return () => fixed;
  const p = compileCel(text);
  return (ctx) => celDurationMs(p.eval(ctx.celContext())) ?? 0;
}

export const delay: PolicyDefinition<'delay'> = {
  name: 'delay',
  build(config) {
    const items = 'conditional' in config ? config.conditional : [config];
    const rules: Rule[] = items.map((d) => ({
      condition: 'condition' in d && typeof d.condition === 'string' ? compileCel(d.condition) : undefined,
      duration: durationOf(d.duration),
    }));
    return async (ctx, next) => {
      for (const r of rules) {
        if (r.condition && !celTrue(r.condition, ctx.celContext())) continue;
        const ms = r.duration(ctx);
        if (ms > 0) {
          try {
            await sleep(ms, undefined, { signal: ctx.signal });
          } catch {
            // Aborted (timeout or client gone): fall through and let the abort reason decide.
          }
          if (ctx.signal.aborted) throw ctx.signal.reason;
        }
        break;
      }
      await next(ctx);
    };
  },
};
