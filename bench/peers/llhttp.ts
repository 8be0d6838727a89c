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

/** A parser with its callbacks; headers past llhttp's first 32 arrive through kOnHeaders first. */
export function parser(
  type: number,
  onHead: (raw: string[], method: number, url: string, status: number, reason: string) => void,
  onBody: (chunk: Buffer) => void,
  onEnd: () => void,
): Parser {
  const p = new HTTPParser();
  p.initialize(type, {}, 0, 0);
  let early: string[] = [];
  p[HTTPParser.kOnHeaders] = (raw: string[]) => {
    early = early.concat(raw);
  };
  p[HTTPParser.kOnHeadersComplete] = (
    _major: number,
    _minor: number,
    raw: string[] | undefined,
    method: number,
    url: string,
    status: number,
    reason: string,
  ) => {
    const all = raw === undefined ? early : early.concat(raw);
    early = [];
    onHead(all, method, url, status, reason);
  };
  p[HTTPParser.kOnBody] = onBody;
  p[HTTPParser.kOnMessageComplete] = onEnd;
  return p;
}
