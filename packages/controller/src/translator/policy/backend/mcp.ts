// spec.backend.mcp (a GwPolicy on an mcp GwBackend or one of its targets; GwBackend spec.policies.mcp)
// → mcpAuthorization. Each GwPolicy block has one action; the standalone rules spell it per rule.
// Authentication and guardrails have no data-plane support yet.
import { checkAuthorization } from '@gw/api';
import { below } from '../context.ts';
import type { BackendMapper, BackendPolicies } from '../spec.ts';
import { authorizationBlock } from '../traffic/authorization.ts';

type McpAuthorizationRules = NonNullable<BackendPolicies['mcpAuthorization']>['rules'];

export const mcp: BackendMapper<'mcp'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['authorization']);
    const a = spec.authorization;
    if (!a) return;
    // the standalone's rule keys are the actions in lower case (allow, deny, and the third)
    const key = a.action.toLowerCase() as 'allow' | 'deny';
    const rules = a.policy.matchExpressions.map((e) => ({ [key]: e })) as McpAuthorizationRules;
    out.mcpAuthorization = { rules };
    // checked in the GwPolicy form, so problems name the CRD's fields (policy.matchExpressions[i])
    ctx.check(checkAuthorization(authorizationBlock(a), below(at, 'authorization').path));
  },
};
