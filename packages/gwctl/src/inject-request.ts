// The request of `gwctl … trace -- <url> [curl-style args]`: parses the curl subset users paste, then
// sends it to 127.0.0.1:<port>; the URL's host only sets the Host header (and TLS server name).
import { readFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { causeOf, GwctlError, usageError } from './errors.ts';

export interface InjectRequest {
  url: URL;
  method: string;
  /** In order, duplicates kept; names as the user typed them. */
  headers: [string, string][];
  body: Buffer | undefined;
  insecure: boolean;
  maxTimeMs: number | undefined;
}

export interface InjectResponse {
  status: number;
  statusMessage: string;
  httpVersion: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export const CURL_HELP = `curl-style arguments after the URL: -X/--request METHOD, -H/--header 'Name: value' (repeatable),
-d/--data DATA (implies POST; @file reads a file), --data-raw DATA, --data-binary DATA|@file,
-u/--user USER:PASS, -A/--user-agent UA, -k/--insecure, -m/--max-time SECONDS; -s -S -v -i are ignored.`;

const WITH_VALUE: Record<string, string> = {
  '-X': 'request',
  '--request': 'request',
  '-H': 'header',
  '--header': 'header',
  '-d': 'data',
  '--data': 'data',
  '--data-ascii': 'data',
  '--data-raw': 'data-raw',
  '--data-binary': 'data-binary',
  '-u': 'user',
  '--user': 'user',
  '-A': 'user-agent',
  '--user-agent': 'user-agent',
  '-m': 'max-time',
  '--max-time': 'max-time',
};
const FLAGS: Record<string, string> = {
  '-k': 'insecure',
  '--insecure': 'insecure',
  '-s': 'ignored',
  '--silent': 'ignored',
  '-S': 'ignored',
  '--show-error': 'ignored',
  '-v': 'ignored',
  '--verbose': 'ignored',
  '-i': 'ignored',
  '--include': 'ignored',
};

/** Splits `-XPOST`, `-sS` and `--header=x` into the separate tokens the parser below expects. */
function tokens(args: string[]): string[] {
  const out: string[] = [];
  for (const a of args) {
    if (a.startsWith('--') && a.includes('=') && WITH_VALUE[a.slice(0, a.indexOf('='))]) {
      out.push(a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1));
    } else if (/^-[A-Za-z]./.test(a)) {
      const first = `-${a[1]}`;
      if (WITH_VALUE[first]) out.push(first, a.slice(2));
      else for (const c of a.slice(1)) out.push(`-${c}`);
    } else out.push(a);
  }
  return out;
}

function readData(value: string, stripNewlines: boolean, kind: string): Buffer {
  if (!value.startsWith('@')) return Buffer.from(value);
  const file = value.slice(1);
  let data: Buffer;
  try {
    data = file === '-' ? readFileSync(0) : readFileSync(file);
  } catch (err) {
    throw usageError(`${kind} ${value}: cannot read ${file} (${causeOf(err)})`);
  }
  return stripNewlines ? Buffer.from(data.toString('utf8').replace(/[\r\n]/g, '')) : data;
}

export function parseCurlArgs(args: string[]): InjectRequest {
  let url: string | undefined;
  let method: string | undefined;
  const headers: [string, string][] = [];
  const data: Buffer[] = [];
  let hasData = false;
  let insecure = false;
  let maxTimeMs: number | undefined;
  const list = tokens(args);
  for (let i = 0; i < list.length; i++) {
    const a = list[i] as string;
    const opt = WITH_VALUE[a];
    if (opt) {
      const v = list[++i];
      if (v === undefined) throw usageError(`${a} needs a value`);
      if (opt === 'request') method = v;
      else if (opt === 'header') {
        const colon = v.indexOf(':');
        if (colon <= 0) throw usageError(`-H ${JSON.stringify(v)}: expected 'Name: value'`);
        const name = v.slice(0, colon).trim();
        if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
          throw usageError(`-H ${JSON.stringify(v)}: ${JSON.stringify(name)} is not a header name`);
        }
        headers.push([name, v.slice(colon + 1).trim()]);
      } else if (opt === 'data' || opt === 'data-raw' || opt === 'data-binary') {
        hasData = true;
        const chunk =
          opt === 'data-raw'
            ? Buffer.from(v)
            : readData(v, opt === 'data', opt === 'data' ? '-d' : `--${opt}`);
        if (data.length > 0) data.push(Buffer.from('&'));
        data.push(chunk);
      } else if (opt === 'user') {
        headers.push(['authorization', `Basic ${Buffer.from(v).toString('base64')}`]);
      } else if (opt === 'user-agent') headers.push(['user-agent', v]);
      else if (opt === 'max-time') {
        const s = Number(v);
        if (!(s > 0)) throw usageError(`--max-time ${v}: expected a number of seconds above 0`);
        maxTimeMs = Math.round(s * 1000);
      }
      continue;
    }
    const flag = FLAGS[a];
    if (flag === 'insecure') insecure = true;
    else if (flag === 'ignored') {
    } else if (a.startsWith('-') && a !== '-') {
      throw usageError(`unsupported curl argument ${a}\n${CURL_HELP}`);
    } else if (url !== undefined) {
      throw usageError(`only one URL can be traced (got ${url} and ${a})`);
    } else url = a;
  }
  if (url === undefined) throw usageError(`no URL after --\n${CURL_HELP}`);
  let parsed: URL;
  try {
    parsed = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `http://${url}`);
  } catch {
    throw usageError(`${url} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw usageError(`${url}: only http and https URLs can be traced`);
  }
  const has = (n: string) => headers.some(([k]) => k.toLowerCase() === n);
  if (!has('user-agent')) headers.push(['user-agent', 'gwctl']);
  if (!has('accept')) headers.push(['accept', '*/*']);
  if (hasData && !has('content-type')) headers.push(['content-type', 'application/x-www-form-urlencoded']);
  return {
    url: parsed,
    method: method ?? (hasData ? 'POST' : 'GET'),
    // `Name:` with nothing after it removes a header in curl; here it means "do not send it".
    headers: headers.filter(([, v]) => v !== ''),
    body: hasData ? Buffer.concat(data) : undefined,
    insecure,
    maxTimeMs,
  };
}

/**
 * Sends the request to 127.0.0.1:`port`; Host (and SNI) come from the URL, which is never resolved.
 * `name` is how errors call that port when it only forwards somewhere else (`pod web-1 port 8080`).
 */
export function sendInjected(
  req: InjectRequest,
  port: number,
  signal?: AbortSignal,
  name = `127.0.0.1:${port}`,
): Promise<InjectResponse> {
  const raw: string[] = [];
  if (!req.headers.some(([k]) => k.toLowerCase() === 'host')) raw.push('host', req.url.host);
  for (const [k, v] of req.headers) raw.push(k, v);
  if (req.body) raw.push('content-length', String(req.body.length));
  const tls = req.url.protocol === 'https:';
  const options = {
    host: '127.0.0.1',
    port,
    method: req.method,
    path: `${req.url.pathname}${req.url.search}`,
    headers: raw,
    setHost: false,
    agent: false as const,
    ...(signal ? { signal } : {}),
    ...(tls
      ? {
          servername: isIP(req.url.hostname) ? '' : req.url.hostname,
          rejectUnauthorized: !req.insecure,
        }
      : {}),
  };
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const out = (tls ? https : http).request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          statusMessage: res.statusMessage ?? '',
          httpVersion: res.httpVersion,
          headers: res.headers,
          body: Buffer.concat(chunks),
        });
      });
      res.on('error', (err) => fail(err));
    });
    const fail = (err: unknown) => {
      clearTimeout(timer);
      reject(
        new GwctlError(
          'GWCTL_ERR_REQUEST_FAILED',
          `the request to ${name} (Host ${req.url.host}) failed: ${causeOf(err)}`,
        ),
      );
    };
    out.on('error', fail);
    if (req.maxTimeMs !== undefined) {
      const ms = req.maxTimeMs;
      timer = setTimeout(() => out.destroy(new Error(`no complete answer within ${ms} ms`)), ms);
    }
    out.end(req.body);
  });
}
