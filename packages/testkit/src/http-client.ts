// A plain node:http client for tests that need what fetch hides: the Host header, a chosen agent,
// the HTTP version and whether the socket was reused.
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  httpVersion: string;
  reusedSocket: boolean;
}

export interface GetOptions {
  host?: string;
  method?: string;
  headers?: Record<string, string>;
  /** Default: a new connection per request. */
  agent?: http.Agent;
  body?: string | Buffer;
}

/** One request to 127.0.0.1:port (a GET unless `method` says), the whole answer's body read as text. */
export function httpGet(port: number, path: string, opts: GetOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'GET',
        headers: { ...(opts.host ? { host: opts.host } : {}), ...opts.headers },
        agent: opts.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
            httpVersion: res.httpVersion,
            reusedSocket: req.reusedSocket,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * A loopback port nothing listens on, for a backend, provider or admin port that must refuse: 1
 * (tcpmux). A port from freePort will not do, as the next server this process starts on port 0 may be
 * handed it (an identity provider once was, and answered 404 where the test expected a refusal).
 * WHATWG fetch refuses port 1 itself ("bad port"): a client on fetch needs a freePort port instead.
 */
export const CLOSED_PORT = 1;

/** Ports freePort has handed out in this process. */
const handedOut = new Set<number>();

/**
 * Where freePort picks: below the kernel's ephemeral range, whose ports every `listen(0)` and outgoing
 * connection on the machine draws from, so no other program takes a port between the pick and the
 * bind. Undefined when there is no room below it (the ports then come from listen(0), as before).
 */
const PICK_RANGE: { low: number; high: number } | undefined = (() => {
  let low = 32768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {}
  // above the ports services and gw itself use by default (15000, 15020, 15021, 9978 …)
  const from = 20_000;
  return Number.isInteger(low) && low - from >= 4096 ? { low: from, high: low - 1 } : undefined;
})();

/** The ports other test processes hold: one file per port, naming the process (`wx`: first wins). */
const RESERVED = join(tmpdir(), 'gw-test-ports');

/** Takes `port` for this process unless a live process holds it. */
function reserve(port: number): boolean {
  const file = join(RESERVED, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch {
      let holder = 0;
      try {
        holder = Number(readFileSync(file, 'utf8').trim() || 0);
      } catch {}
      try {
        if (holder > 0 && holder !== process.pid) {
          process.kill(holder, 0);
          return false;
        }
      } catch {}
      // the holder has exited (or wrote nothing): the port is free to take again
      rmSync(file, { force: true });
    }
  }
  return false;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

function ephemeralPort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/**
 * A loopback port free now, never one this process was handed before. It is picked below the
 * ephemeral range (another program's listen(0) or connection cannot take it before the test binds
 * it) and reserved against the other test processes, which run in parallel; a test that binds it
 * much later (a controller started after a Helm install) still finds it free. The OS alone may give a
 * port it just gave back: a test that picked its proxy's listener port, then started a controller that
 * picked its own ports, once saw both get 44137.
 */
export async function freePort(): Promise<number> {
  if (PICK_RANGE) {
    mkdirSync(RESERVED, { recursive: true });
    const span = PICK_RANGE.high - PICK_RANGE.low + 1;
    for (let i = 0; i < 200; i++) {
      const port = PICK_RANGE.low + Math.floor(Math.random() * span);
      if (handedOut.has(port) || !reserve(port)) continue;
      // taken before the check awaits, so that calls at once never share a port
      handedOut.add(port);
      if (await canListen(port)) return port;
    }
  }
  for (;;) {
    const port = await ephemeralPort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

process.once('exit', () => {
  for (const port of handedOut) {
    const file = join(RESERVED, String(port));
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {}
  }
});

export interface RawReply {
  /** Status of the final response (after any 1xx). */
  status: number;
  /** Every status line received, 1xx included, in order. */
  statusLines: string[];
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends `text` as-is on a new connection and reads until the server closes it: for what a client
 * library would not send (raw paths, duplicate headers, absolute-form targets). Ask for
 * `Connection: close`. With `afterContinue`, `body` is written only once a `100 Continue` arrives, as an
 * `Expect: 100-continue` client does.
 */
export function rawRequest(
  port: number,
  text: string,
  opts: { body?: string; afterContinue?: boolean; timeoutMs?: number } = {},
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let pending = opts.body;
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(text);
      if (pending !== undefined && !opts.afterContinue) {
        socket.write(pending);
        pending = undefined;
      }
    });
    const timer = setTimeout(
      () => socket.destroy(new Error('raw request timed out')),
      opts.timeoutMs ?? 5000,
    );
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      if (pending !== undefined && /^HTTP\/1\.1 100 /.test(Buffer.concat(chunks).toString('latin1'))) {
        socket.write(pending);
        pending = undefined;
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      let rest = Buffer.concat(chunks).toString('latin1');
      const statusLines: string[] = [];
      let headers: Record<string, string> = {};
      for (;;) {
        const end = rest.indexOf('\r\n\r\n');
        if (end === -1) break;
        const [line = '', ...lines] = rest.slice(0, end).split('\r\n');
        statusLines.push(line);
        headers = {};
        for (const l of lines) {
          const i = l.indexOf(':');
          headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
        }
        rest = rest.slice(end + 4);
        if (!/^HTTP\/1\.[01] 1\d\d/.test(line)) break;
      }
      const last = statusLines[statusLines.length - 1] ?? '';
      const body = headers['transfer-encoding'] === 'chunked' ? unchunk(rest) : rest;
      resolve({ status: Number(last.split(' ')[1] ?? 0), statusLines, headers, body });
    });
  });
}

function unchunk(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.slice(0, eol), 16);
    if (eol === -1 || !(size > 0)) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 4 + size);
  }
}

/**
 * Sends `text` over a TCP connection to 127.0.0.1:port and ends it once the same text came back (an
 * echo behind a TCP route): what came back before the connection closed ('' when nothing did).
 */
export function tcpRoundTrip(port: number, text = 'ping'): Promise<string> {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1', () => c.write(text));
    let got = '';
    c.on('data', (d: Buffer) => {
      got += d.toString();
      if (got === text) c.end();
    });
    c.on('close', () => resolve(got));
    c.on('error', () => resolve(got));
  });
}

/**
 * Writes `text` on a new connection to 127.0.0.1:port and reads until `until` matches what came
 * back (then closes it): for a CONNECT and what follows it, or bytes no client library sends.
 */
export async function rawUntil(port: number, text: string | Buffer, until: RegExp): Promise<string> {
  const s = net.connect(port, '127.0.0.1');
  await once(s, 'connect');
  s.write(text);
  let got = '';
  s.setEncoding('utf8');
  for await (const chunk of s) {
    got += chunk;
    if (until.test(got)) break;
  }
  s.destroy();
  return got;
}

/** A TCP server on 127.0.0.1 that answers each read with `echo: <what it read>`. */
export async function startLineEcho(): Promise<{ server: net.Server; port: number }> {
  const server = net.createServer((s) => {
    s.on('data', (d) => s.write(`echo: ${String(d)}`));
    s.on('error', () => s.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}
