// directResponse: the gateway answers with a fixed status, body and headers; nothing is forwarded.
import type { PolicyDefinition } from '../types.ts';

export const directResponse: PolicyDefinition<'directResponse'> = {
  name: 'directResponse',
  build(config) {
    const body = config.body === undefined ? null : Buffer.from(config.body);
    const headers = Object.fromEntries(
      Object.entries(config.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
    );
    return async (ctx) => {
      ctx.body = null;
      ctx.response = { status: config.status, headers: { ...headers }, body };
    };
  },
};
