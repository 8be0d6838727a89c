// node's own C llhttp binding, as node:http uses it (the HTTPParser that node:_http_common exports),
// for the bench's measuring-stick peers (node-raw, node-raw-undici).
import { createRequire } from 'node:module';

export interface Parser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  execute(data: Buffer): number | Error;
  [key: number]: unknown;
}
interface HttpCommon {
  HTTPParser: {
    new (): Parser;
    REQUEST: number;
    RESPONSE: number;
    kOnHeaders: number;
    kOnHeadersComplete: number;
    kOnBody: number;
    kOnMessageComplete: number;
  };
  methods: string[];
}
export const { HTTPParser, methods } = createRequire(import.meta.url)('_http_common') as HttpCommon;
