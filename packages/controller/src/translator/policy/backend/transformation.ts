// spec.backend.transformation (GwBackend spec.policies.transformation) → the backend's own
// transformations (see ../transformation.ts).
import type { BackendMapper } from '../spec.ts';
import { transformation as map } from '../transformation.ts';

export const transformation: BackendMapper<'transformation'> = {
  map(spec, ctx, out, at) {
    out.transformations = map(spec, ctx, at);
  },
};
