// A backend that does not exist (`invalid: null`; the controller's stand-in for a backendRef that does
// not resolve): the requests it is picked for, by its weight, are answered 500, as Gateway API asks.
import { GwError } from '../../../errors.ts';
import type { BackendKind } from '../types.ts';

export const invalidBackend: BackendKind<'invalid'> = {
  kind: 'invalid',
  compile() {
    return {
      type: 'invalid',
      protocol: 'http',
      target: () => 'invalid',
      call: () => {
        throw new GwError('GW_ERR_INVALID_BACKEND');
      },
    };
  },
};
