// spec.frontend.networkAuthorization → networkAuthorization: the traffic authorization block's shape,
// evaluated per connection; its match expressions are checked as CEL.
import { checkAuthorization } from '@gw/api';
import type { FrontendMapper } from '../spec.ts';
import { authorizationBlock } from '../traffic/authorization.ts';

export const networkAuthorization: FrontendMapper<'networkAuthorization'> = {
  map(spec, ctx, out, at) {
    out.networkAuthorization = authorizationBlock(spec);
    ctx.check(checkAuthorization(out.networkAuthorization, at.path));
  },
};
