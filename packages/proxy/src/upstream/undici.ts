// The parts of undici gw uses: its dispatchers (Pool, Agent, ProxyAgent), the connector, its errors and
// `request`. undici's index also loads fetch, WebSocket, EventSource, the cache and mock layers and
// more, none of which gw calls: importing the index costs 5.8 MiB of V8 heap in every thread that does
// (the main thread and each worker), these modules 2.4 MiB. undici has no `exports` map, so its
// modules are public paths; the version is pinned in package.json, and undici.test.ts checks that
// these are the very objects the index exports.
import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const load = createRequire(import.meta.url);

const dispatcher = load('undici/lib/dispatcher/dispatcher.js') as { prototype: object };
// As undici's index does: the request/stream/pipeline/upgrade/connect methods of every dispatcher.
Object.assign(dispatcher.prototype, load('undici/lib/api/index.js'));

export const Pool = load('undici/lib/dispatcher/pool.js') as typeof Undici.Pool;
export type Pool = Undici.Pool;
export const Agent = load('undici/lib/dispatcher/agent.js') as typeof Undici.Agent;
export type Agent = Undici.Agent;
export const ProxyAgent = load('undici/lib/dispatcher/proxy-agent.js') as typeof Undici.ProxyAgent;
export const buildConnector = load('undici/lib/core/connect.js') as typeof Undici.buildConnector;
export const errors = load('undici/lib/core/errors.js') as typeof Undici.errors;

export type RequestOptions = Omit<Undici.Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & {
  method?: Undici.Dispatcher.HttpMethod;
  /** Always given: gw never sends through undici's global dispatcher. */
  dispatcher: Undici.Dispatcher;
};

/** undici's `request(url, options)`, with the dispatcher required. */
export function request(url: string | URL, opts: RequestOptions): Promise<Undici.Dispatcher.ResponseData> {
  const u = typeof url === 'string' ? new URL(url) : url;
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return Promise.reject(new errors.InvalidArgumentError(`invalid URL protocol ${u.protocol}`));
  }
  const { dispatcher: d, ...rest } = opts;
  return d.request({
    ...rest,
    origin: u.origin,
    path: u.search ? `${u.pathname}${u.search}` : u.pathname,
    method: opts.method ?? (opts.body ? 'PUT' : 'GET'),
  });
}
