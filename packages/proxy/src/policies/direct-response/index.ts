// directResponse: the gateway answers with a status, body and headers; nothing is forwarded. As in
// agentgateway, each header value is a CEL expression over the request (a header whose expression
// fails or gives no string is left out), and bodyExpression computes the body (a failure is a 500).
import { compileCel } from '../../cel/cel.ts';
import { GwError } from '../../errors.ts';
import { withConditional } from '../conditional.ts';
import { bodyOf } from '../transformations/index.ts';
import type { PolicyConfig } from '../types.ts';

type DirectResponse = Exclude<PolicyConfig<'directResponse'>, { conditional: unknown }>;

const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export const directResponse = withConditional({
  name: 'directResponse',
  build(config: DirectResponse) {
    const body = config.body === undefined ? null : Buffer.from(config.body);
    const bodyExpression = config.bodyExpression == null ? undefined : compileCel(config.bodyExpression);
    const headers = Object.entries(config.headers ?? {}).map(
      ([k, v]) => [k.toLowerCase(), compileCel(v)] as const,
    );
    return async (ctx) => {
      const needsCel = headers.length > 0 || bodyExpression !== undefined;
      const cel = needsCel ? ctx.celContext() : undefined;
      let answer: Buffer | null = body;
      if (bodyExpression && cel) {
        const v = bodyExpression.eval(cel);
        if (v === undefined) throw new GwError('GW_ERR_INTERNAL', 'the directResponse bodyExpression failed');
        answer = bodyOf(v);
      }
      const out: Record<string, string> = {};
      if (cel)
        for (const [name, p] of headers) {
          const v = p.eval(cel);
          if (typeof v === 'string' && HEADER_VALUE.test(v)) out[name] = v;
        }
      ctx.body = null;
      ctx.response = { status: config.status, headers: out, body: answer };
    };
  },
});
