// An HTTP/1.1 server of gw's own on node:net, behind GW_HTTP1_SERVER=net (issue 17): the same C
// llhttp parser node:http runs (node's HTTPParser binding, strict, no lenient flags), the same
// request objects (IncomingMessage, so policies, undici and the body watchers see what they see
// today), and a response writer of its own in place of node's ServerResponse/OutgoingMessage, which
// is where most of node:http's cost per request lies (bench/LAYERS.md).
//
// It does what the data plane asks of node's server, and no more:
// - keep-alive, with node's idle timer (keepAliveTimeout) between requests; pipelined requests are
//   answered in order, a later answer held until the ones before it are out;
// - framing as node chooses it: Content-Length when the length is known, chunked otherwise, the
//   connection's end for an HTTP/1.0 client; no body for HEAD, 1xx, 204 and 304;
// - `Date` and `Connection`/`Keep-Alive` headers as node writes them;
// - Expect: 100-continue handed to the data plane unanswered (it sends the 100 when the body is
//   read); any other expectation answered 417;
// - Upgrade and CONNECT handed over with the connection and the bytes after the head;
// - the headers timeout (counted from the connection's start for its first request), checked on an
//   interval as node does, and parse errors, each reported as node's 'clientError' would be;
// - an HTTP/1.1 request without Host is refused (400), as node's requireHostHeader does.
// Not supported, as gw never asks for them: requestTimeout (gw sets 0), trailers on answers.

import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { STATUS_CODES, validateHeaderName, validateHeaderValue } from 'node:http';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { ChurnCountingRequest } from '../pipeline/body-churn.ts';

interface Parser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  execute(data: Buffer): number | Error;
  finish(): undefined | Error;
  close(): void;
  free(): void;
  remove(): void;
  [key: number]: unknown;
}
interface HttpCommon {
  HTTPParser: {
    new (): Parser;
    REQUEST: number;
    kOnMessageBegin: number;
    kOnHeaders: number;
    kOnHeadersComplete: number;
    kOnBody: number;
    kOnMessageComplete: number;
    kOnExecute: number;
    kLenientNone: number;
  };
  methods: string[];
  prepareError(err: Error, parser: Parser, raw: Buffer): void;
}
// node's own binding, as node:http and its client use it (lib/_http_common.js)
const { HTTPParser, methods, prepareError } = createRequire(import.meta.url)('_http_common') as HttpCommon;

/** The server's settings, under node:http's names so one Object.assign configures either server. */
export interface H1Settings {
  keepAliveTimeout: number;
  headersTimeout: number;
  requestTimeout: number;
  connectionsCheckingInterval: number;
  maxHeadersCount: number;
  /** The longest request head in bytes (llhttp's limit; 0: node's --max-http-header-size). */
  maxHeaderSize: number;
}

export interface H1Handlers {
  request(req: IncomingMessage, res: H1Response): void;
  /** Upgrade (when `shouldUpgrade` says so) and CONNECT: the connection leaves HTTP. */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void;
  shouldUpgrade(req: IncomingMessage): boolean;
  /** A parse error, a timeout or a socket error, as node's 'clientError'. */
  clientError(err: NodeJS.ErrnoException, socket: Socket): void;
}

export class H1Server implements H1Settings {
  keepAliveTimeout = 5_000;
  headersTimeout = 60_000;
  requestTimeout = 0;
  connectionsCheckingInterval = 30_000;
  maxHeadersCount = 2000;
  maxHeaderSize = 0;
  readonly #handlers: H1Handlers;
  readonly #connections = new Set<H1Connection>();
  #checker: NodeJS.Timeout | undefined = undefined;
  #checkingEvery = 0;
  #closed = false;

  constructor(handlers: H1Handlers) {
    this.#handlers = handlers;
  }

  get handlers(): H1Handlers {
    return this.#handlers;
  }

  /** Serves an accepted connection (node:http's `server.emit('connection', socket)`). */
  connection(socket: Socket): void {
    // the connection takes itself off the list when it closes or is handed over (forget)
    this.#connections.add(new H1Connection(this, socket));
    this.#check();
  }

  forget(c: H1Connection): void {
    this.#connections.delete(c);
  }

  /** Stops the timers and closes the idle connections; busy ones close after their answer. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#checker);
    this.#checker = undefined;
    for (const c of this.#connections) c.closeWhenIdle();
  }

  get closed(): boolean {
    return this.#closed;
  }

  closeIdleConnections(): void {
    for (const c of this.#connections) if (c.idle) c.socket.destroy();
  }

  /** The headers timeout is checked on an interval, as node does (connectionsCheckingInterval). */
  #check(): void {
    const every = this.connectionsCheckingInterval;
    if (this.#closed || this.headersTimeout <= 0) return;
    if (this.#checker !== undefined && this.#checkingEvery === every) return;
    clearInterval(this.#checker);
    this.#checkingEvery = every;
    this.#checker = setInterval(() => {
      if (this.#connections.size === 0) {
        clearInterval(this.#checker);
        this.#checker = undefined;
        return;
      }
      const now = performance.now();
      const limit = this.headersTimeout;
      if (limit <= 0) return;
      for (const c of this.#connections) c.checkHeadersTimeout(now, limit);
    }, every);
    this.#checker.unref();
  }
}

const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;
const EMPTY = Buffer.alloc(0);

/** One client connection: its parser, the request being read and the answers not yet out. */
export class H1Connection {
  readonly server: H1Server;
  readonly socket: Socket;
  readonly #parser: Parser;
  /** Answers in request order; the first is the one writing to the socket. */
  readonly #answers: H1Response[] = [];
  /** The request whose head or body is being read. */
  #reading: IncomingMessage | undefined = undefined;
  /** When the head being waited for started (ms, performance.now()); 0 when none is awaited. */
  #headStartedAt: number;
  #headers: string[] = [];
  #url = '';
  /** An upgrade the parser stopped at, handed over once execute returns. */
  #upgrading: IncomingMessage | undefined = undefined;
  #done = false;
  #closeWhenIdle = false;
  readonly #onData = (d: Buffer) => this.#read(d);
  readonly #onEnd = () => this.#ended();
  readonly #onClose = () => this.#closed();
  readonly #onDrain = () => this.#answers[0]?.emit('drain');
  readonly #onError = (err: NodeJS.ErrnoException) => this.server.handlers.clientError(err, this.socket);
  /** The keep-alive timer (the socket's own, armed only while the connection waits for a request). */
  readonly #onTimeout = () => {
    if (this.idle) this.socket.destroy();
  };

  constructor(server: H1Server, socket: Socket) {
    this.server = server;
    this.socket = socket;
    this.#headStartedAt = performance.now();
    const p = new HTTPParser();
    p.initialize(HTTPParser.REQUEST, {}, server.maxHeaderSize, HTTPParser.kLenientNone);
    p[HTTPParser.kOnMessageBegin] = () => {
      if (this.#headStartedAt === 0) this.#headStartedAt = performance.now();
    };
    p[HTTPParser.kOnHeaders] = (headers: string[], url: string) => {
      // llhttp hands over headers 32 at a time when a head is long or split across reads (its size
      // limit bounds them); the count is capped once, in #head
      for (const h of headers) this.#headers.push(h);
      this.#url += url;
    };
    p[HTTPParser.kOnHeadersComplete] = (
      major: number,
      minor: number,
      headers: string[] | undefined,
      method: number,
      url: string | undefined,
      _status: number,
      _reason: string,
      upgrade: boolean,
      keepAlive: boolean,
    ) => this.#head(major, minor, headers, method, url, upgrade, keepAlive);
    p[HTTPParser.kOnBody] = (chunk: Buffer) => {
      const req = this.#reading;
      if (req === undefined || (req as { _dumped?: boolean })._dumped) return;
      if (!req.push(chunk)) socket.pause();
    };
    p[HTTPParser.kOnMessageComplete] = () => {
      const req = this.#reading;
      this.#reading = undefined;
      // headers that arrive after the head are the body's trailers
      const trailers = this.#headers;
      if (trailers.length > 0) {
        this.#headers = [];
        this.#url = '';
      }
      if (req === undefined) return;
      req.complete = true;
      if (trailers.length > 0)
        (req as IncomingMessage & { _addHeaderLines(h: string[], n: number): void })._addHeaderLines(
          trailers,
          trailers.length,
        );
      req.push(null);
      // a body nobody reads no longer holds the connection's reading
      if (this.socket.isPaused() && !this.#done) this.socket.resume();
    };
    this.#parser = p;
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onClose);
    socket.on('drain', this.#onDrain);
    socket.on('error', this.#onError);
    socket.on('timeout', this.#onTimeout);
  }

  /** No request is being read or answered. */
  get idle(): boolean {
    return this.#reading === undefined && this.#answers.length === 0;
  }

  /** The answer writing now, as node keeps it on the socket (`_httpMessage`). */
  get answering(): H1Response | undefined {
    return this.#answers[0];
  }

  closeWhenIdle(): void {
    this.#closeWhenIdle = true;
    if (this.idle) this.socket.end();
    else for (const a of this.#answers) if (!a.headersSent) a.shouldKeepAlive = false;
  }

  checkHeadersTimeout(now: number, limit: number): void {
    if (this.#headStartedAt === 0 || this.#done || now - this.#headStartedAt < limit) return;
    this.#headStartedAt = 0;
    this.#stop();
    const err = Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
    this.server.handlers.clientError(err, this.socket);
  }

  #read(d: Buffer): void {
    const parser = this.#parser;
    let data = d;
    for (;;) {
      const n = parser.execute(data);
      if (n instanceof Error) {
        prepareError(n, parser, data);
        this.#stop();
        this.server.handlers.clientError(n as NodeJS.ErrnoException, this.socket);
        return;
      }
      const up = this.#upgrading;
      if (up !== undefined) {
        this.#upgrading = undefined;
        this.#handOver(up, data.subarray(n));
        return;
      }
      // llhttp stops after a message it took for an upgrade that the server declined: go on with the rest
      if (n >= data.length || n === 0 || this.#done) return;
      data = data.subarray(n);
    }
  }

  #head(
    major: number,
    minor: number,
    headers: string[] | undefined,
    method: number,
    url: string | undefined,
    upgrade: boolean,
    keepAlive: boolean,
  ): number {
    // the rest of a read the parser is still going through, after the connection stopped reading
    if (this.#done) return 0;
    let raw = headers ?? this.#headers;
    if (headers !== undefined && this.#headers.length > 0) raw = this.#headers.concat(headers);
    this.#headers = [];
    const path = url === undefined ? this.#url : url;
    this.#url = '';
    this.#headStartedAt = 0;
    const socket = this.socket;
    const req = new ChurnCountingRequest(socket);
    req.httpVersionMajor = major;
    req.httpVersionMinor = minor;
    req.httpVersion = `${major}.${minor}`;
    req.url = path;
    req.method = methods[method] as string;
    const max = this.server.maxHeadersCount * 2;
    (req as IncomingMessage & { _addHeaderLines(h: string[], n: number): void })._addHeaderLines(
      raw,
      max > 0 ? Math.min(raw.length, max) : raw.length,
    );
    if (upgrade && (req.method === 'CONNECT' || this.server.handlers.shouldUpgrade(req))) {
      (req as IncomingMessage & { upgrade: boolean }).upgrade = true;
      this.#upgrading = req;
      return 0;
    }
    this.#reading = req;
    const res = new H1Response(this, req, keepAlive && !this.#closeWhenIdle && !this.server.closed);
    this.#answers.push(res);
    if (this.#answers.length === 1) this.#activate(res);
    // node's keep-alive timer stops while a request is served
    if (this.#answers.length === 1) socket.setTimeout(0);
    if (major === 1 && minor === 1 && req.headers.host === undefined) {
      // node's requireHostHeader (RFC 9112 §3.2); nothing after it on the connection is read
      this.#stop();
      res.shouldKeepAlive = false;
      res.writeHead(400);
      res.end();
      return 0;
    }
    // node's: only HTTP/1.1 expectations count; one other than 100-continue is answered 417
    const expect = req.headers.expect;
    if (expect !== undefined && major === 1 && minor === 1 && !CONTINUE.test(expect)) {
      res.writeHead(417);
      res.end();
      return 0;
    }
    // A client waiting for a 100 that never comes may or may not send its body after the answer:
    // the connection closes after it (node's _expect_continue)
    if (expect !== undefined && major === 1 && minor === 1) res.expectsContinue = true;
    this.server.handlers.request(req, res);
    return 0;
  }

  #activate(res: H1Response): void {
    (this.socket as Socket & { _httpMessage?: H1Response | null })._httpMessage = res;
    res.activate();
  }

  /** An answer is out: the next one may write, or the connection waits for a request or closes. */
  finished(res: H1Response): void {
    if (this.#answers[0] !== res) return;
    this.#answers.shift();
    const socket = this.socket;
    (socket as Socket & { _httpMessage?: H1Response | null })._httpMessage = null;
    if (!res.shouldKeepAlive) {
      this.#stop();
      socket.end();
      return;
    }
    const next = this.#answers[0];
    if (next !== undefined) {
      this.#activate(next);
      return;
    }
    if (this.#closeWhenIdle && this.#reading === undefined) {
      socket.end();
      return;
    }
    const idle = this.server.keepAliveTimeout;
    if (idle > 0 && this.#reading === undefined) socket.setTimeout(idle);
  }

  /** Upgrade or CONNECT: the parser is done with this connection, its new owner reads the rest. */
  #handOver(req: IncomingMessage, head: Buffer): void {
    this.#stop();
    this.#detach();
    this.server.forget(this);
    req.complete = true;
    req.push(null);
    // as node leaves it: the new owner's 'data' listener starts the flow again
    (this.socket as unknown as { readableFlowing: boolean | null }).readableFlowing = null;
    this.server.handlers.upgrade(req, this.socket, head.length === 0 ? EMPTY : Buffer.from(head));
  }

  /** No more requests are read from this connection. */
  #stop(): void {
    if (this.#done) return;
    this.#done = true;
    this.socket.off('data', this.#onData);
    this.socket.setTimeout(0);
    // never from inside execute (its callbacks may get here): once the current task is done
    const p = this.#parser;
    setImmediate(() => p.close());
  }

  #detach(): void {
    const s = this.socket;
    s.off('end', this.#onEnd);
    s.off('close', this.#onClose);
    s.off('drain', this.#onDrain);
    s.off('error', this.#onError);
    s.off('timeout', this.#onTimeout);
  }

  /** The client ended its side: the request being read is cut short, the connection ends. */
  #ended(): void {
    if (!this.#done) {
      const err = this.#parser.finish();
      if (err instanceof Error) {
        this.#stop();
        this.server.handlers.clientError(err as NodeJS.ErrnoException, this.socket);
        return;
      }
    }
    this.#abortReading();
    if (this.socket.writable && this.#answers.length === 0) this.socket.end();
  }

  #abortReading(): void {
    const req = this.#reading;
    this.#reading = undefined;
    if (req !== undefined && !req.complete)
      req.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
  }

  #closed(): void {
    this.#stop();
    this.#abortReading();
    const answers = this.#answers.splice(0);
    for (const a of answers) a.closedUnder();
    this.server.forget(this);
  }
}

const CRLF = '\r\n';
/** Statuses whose answers have no body (RFC 9110 §6.4.1). */
const noBody = (status: number): boolean =>
  status === 204 || status === 304 || (status >= 100 && status < 200);

/** The `Date` header's value, made once a second. */
let dateValue = '';
let dateUntil = 0;
function httpDate(): string {
  const now = Date.now();
  if (now >= dateUntil) {
    dateValue = new Date(now).toUTCString();
    dateUntil = now - (now % 1000) + 1000;
  }
  return dateValue;
}

type HeaderValue = string | number | readonly string[];
/** A head made by writeHead, before its framing and connection headers are known. */
interface Head {
  lines: string;
  length: boolean;
  te: string | undefined;
  date: boolean;
  connection: string | undefined;
}

/**
 * The answer to one request: the slice of node's ServerResponse the data plane uses (writeHead,
 * setHeader, write, end, writeContinue, destroy, headersSent, statusCode, shouldKeepAlive, and the
 * 'drain', 'finish' and 'close' events), written straight to the socket.
 */
export class H1Response extends EventEmitter {
  readonly req: IncomingMessage;
  readonly #conn: H1Connection;
  statusCode = 200;
  statusMessage: string | undefined = undefined;
  shouldKeepAlive: boolean;
  sendDate = true;
  /** The request said `Expect: 100-continue`; until a 100 goes out, the answer closes the connection. */
  expectsContinue = false;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  /** Header names (lower case) to [name as given, value]. */
  #headers: Map<string, [string, HeaderValue]> | undefined = undefined;
  #active = false;
  /** What was written before this answer's turn on the connection (pipelining). */
  #held: (string | Buffer)[] | undefined = undefined;
  #heldEnd = false;
  #chunked = false;
  #hasBody = true;
  #closed = false;

  constructor(conn: H1Connection, req: IncomingMessage, keepAlive: boolean) {
    super();
    this.#conn = conn;
    this.req = req;
    this.shouldKeepAlive = keepAlive;
  }

  get socket(): Socket | null {
    return this.#closed ? null : this.#conn.socket;
  }

  get writableLength(): number {
    return this.#conn.socket.writableLength;
  }

  get writableNeedDrain(): boolean {
    return this.#conn.socket.writableNeedDrain;
  }

  setHeader(name: string, value: HeaderValue): this {
    if (this.headersSent) throw headersSentError('set');
    validateHeaderName(name);
    if (typeof value === 'object') for (const v of value) validateHeaderValue(name, v);
    else validateHeaderValue(name, String(value));
    this.#headers ??= new Map();
    this.#headers.set(name.toLowerCase(), [name, value]);
    return this;
  }

  getHeader(name: string): HeaderValue | undefined {
    return this.#headers?.get(name.toLowerCase())?.[1];
  }

  hasHeader(name: string): boolean {
    return this.#headers?.has(name.toLowerCase()) ?? false;
  }

  getHeaderNames(): string[] {
    return this.#headers ? [...this.#headers.keys()] : [];
  }

  getHeaders(): Record<string, HeaderValue> {
    const out: Record<string, HeaderValue> = Object.create(null);
    if (this.#headers) for (const [k, [, v]] of this.#headers) out[k] = v;
    return out;
  }

  removeHeader(name: string): void {
    if (this.headersSent) throw headersSentError('remove');
    this.#headers?.delete(name.toLowerCase());
  }

  writeHead(
    status: number,
    reason?: string | Record<string, HeaderValue | undefined> | readonly string[],
    headers?: Record<string, HeaderValue | undefined> | readonly string[],
  ): this {
    if (this.headersSent) throw headersSentError('write');
    if (!Number.isInteger(status) || status < 100 || status > 999) {
      throw Object.assign(new RangeError(`Invalid status code: ${status}`), {
        code: 'ERR_HTTP_INVALID_STATUS_CODE',
      });
    }
    let h = headers;
    if (typeof reason === 'string') this.statusMessage = reason;
    else h = reason;
    // the head is made here, so an invalid header throws before anything is sent (as node's does)
    let lines = '';
    let length = false;
    let te: string | undefined;
    let date = false;
    let connection: string | undefined;
    const add = (name: string, value: HeaderValue | undefined): void => {
      if (value === undefined) return;
      validateHeaderName(name);
      const lower = name.length <= 17 ? name.toLowerCase() : '';
      if (typeof value === 'object') {
        for (const v of value) {
          validateHeaderValue(name, v);
          lines += `${name}: ${v}${CRLF}`;
        }
      } else {
        validateHeaderValue(name, typeof value === 'string' ? value : String(value));
        lines += `${name}: ${value}${CRLF}`;
      }
      switch (lower) {
        case 'content-length':
          length = true;
          break;
        case 'transfer-encoding':
          te = String(value);
          break;
        case 'date':
          date = true;
          break;
        case 'connection':
          connection = String(value);
          break;
      }
    };
    if (this.#headers !== undefined) {
      for (const [lower, [name, value]] of this.#headers)
        if (h === undefined || Array.isArray(h) || !(lower in h)) add(name, value);
    }
    if (h !== undefined) {
      if (Array.isArray(h)) for (let i = 0; i + 1 < h.length; i += 2) add(h[i] as string, h[i + 1] as string);
      else
        for (const name in h as Record<string, HeaderValue | undefined>)
          add(name, (h as Record<string, HeaderValue>)[name]);
    }
    this.statusCode = status;
    this.#head = { lines, length, te, date, connection };
    return this;
  }

  #head: Head | undefined = undefined;

  /** The head as it goes out; `bodyLength` is the whole body's when end() carries all of it. */
  #headText(bodyLength: number | undefined): string {
    if (this.#head === undefined) this.writeHead(this.statusCode);
    const h = this.#head as Head;
    const req = this.req;
    const status = this.statusCode;
    this.#hasBody = req.method !== 'HEAD' && !noBody(status);
    let out = `HTTP/1.1 ${status} ${this.statusMessage ?? STATUS_CODES[status] ?? 'unknown'}${CRLF}${h.lines}`;
    if (this.sendDate && !h.date) out += `Date: ${httpDate()}${CRLF}`;
    const http10 = req.httpVersionMajor === 1 && req.httpVersionMinor === 0;
    let keepAlive = this.shouldKeepAlive && !this.expectsContinue;
    if (h.connection !== undefined && /(?:^|,)\s*close\s*(?:,|$)/i.test(h.connection)) keepAlive = false;
    let framing = '';
    if (h.te !== undefined) {
      if (/(?:^|,)\s*chunked\s*$/i.test(h.te)) this.#chunked = this.#hasBody;
      else keepAlive = false; // delimited by the connection's end
    } else if (!h.length && this.#hasBody) {
      if (bodyLength !== undefined) framing = `Content-Length: ${bodyLength}${CRLF}`;
      else if (http10) keepAlive = false;
      else {
        this.#chunked = true;
        framing = `Transfer-Encoding: chunked${CRLF}`;
      }
    }
    this.shouldKeepAlive = keepAlive;
    if (h.connection === undefined) {
      if (keepAlive) {
        out += `Connection: keep-alive${CRLF}`;
        const idle = this.#conn.server.keepAliveTimeout;
        if (idle > 0) out += `Keep-Alive: timeout=${Math.floor(idle / 1000)}${CRLF}`;
      } else out += `Connection: close${CRLF}`;
    }
    this.headersSent = true;
    return `${out}${framing}${CRLF}`;
  }

  /** Sends the head now, before any body (node's flushHeaders). */
  flushHeaders(): void {
    if (this.headersSent) return;
    this.#send(this.#headText(undefined), undefined, false);
  }

  writeContinue(): void {
    if (this.headersSent) return;
    this.expectsContinue = false;
    this.#send('HTTP/1.1 100 Continue\r\n\r\n', undefined, false);
  }

  write(
    chunk: string | Buffer | Uint8Array,
    encoding?: BufferEncoding | (() => void),
    cb?: () => void,
  ): boolean {
    if (this.writableEnded || this.destroyed) return false;
    const data = toBuffer(chunk, typeof encoding === 'string' ? encoding : undefined);
    const head = this.headersSent ? undefined : this.#headText(undefined);
    const ok = this.#send(head, data, false);
    const done = typeof encoding === 'function' ? encoding : cb;
    if (done) process.nextTick(done);
    return ok;
  }

  end(
    chunk?: string | Buffer | Uint8Array | (() => void),
    encoding?: BufferEncoding | (() => void),
    cb?: () => void,
  ): this {
    if (this.writableEnded) return this;
    let data: Buffer | undefined;
    let done = cb;
    if (typeof chunk === 'function') done = chunk;
    else if (chunk !== undefined && chunk !== null)
      data = toBuffer(chunk, typeof encoding === 'string' ? encoding : undefined);
    if (typeof encoding === 'function') done = encoding;
    if (done) this.once('finish', done);
    this.writableEnded = true;
    const head = this.headersSent ? undefined : this.#headText(data?.length ?? 0);
    this.#send(head, data, true);
    return this;
  }

  destroy(err?: Error): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    if (!this.#closed) this.#conn.socket.destroy(err);
    return this;
  }

  /** This answer's turn on the connection: what it wrote while waiting goes out. */
  activate(): void {
    this.#active = true;
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    const s = this.#conn.socket;
    s.cork();
    for (const part of held) s.write(part, 'latin1');
    s.uncork();
    if (this.#heldEnd) this.#afterFlush(this.#onLastWrite);
    else this.emit('drain');
  }

  /** The connection closed before this answer was out. */
  closedUnder(): void {
    if (this.#closed) return;
    this.destroyed = true;
    this.#close();
  }

  #send(head: string | undefined, data: Buffer | undefined, last: boolean): boolean {
    const body = data !== undefined && data.length > 0 && this.#hasBody ? data : undefined;
    if (!this.#active) {
      this.#held ??= [];
      if (head !== undefined) this.#held.push(head);
      if (body !== undefined) this.#pushFramed(this.#held, body);
      if (last) {
        if (this.#chunked) this.#held.push('0\r\n\r\n');
        this.#heldEnd = true;
      }
      return false;
    }
    const s = this.#conn.socket;
    if (s.destroyed) return false;
    const done = last ? this.#onLastWrite : undefined;
    if (!this.#chunked) {
      if (head !== undefined && body !== undefined) {
        s.cork();
        s.write(head, 'latin1');
        const ok = s.write(body, done);
        s.uncork();
        return ok;
      }
      if (head !== undefined) return s.write(head, 'latin1', done);
      if (body !== undefined) return s.write(body, done);
      if (done !== undefined) this.#afterFlush(done);
      return true;
    }
    s.cork();
    if (head !== undefined) s.write(head, 'latin1');
    let ok = true;
    if (body !== undefined) {
      s.write(`${body.length.toString(16)}\r\n`, 'latin1');
      s.write(body);
      ok = s.write(CRLF, 'latin1', last ? undefined : done);
    }
    if (last) ok = s.write('0\r\n\r\n', 'latin1', done);
    s.uncork();
    return ok;
  }

  /**
   * `done` once what was written is handed to the system: a tick later when nothing waits in the
   * socket's buffer, which spares an empty write and its system call for an end() after the body.
   */
  #afterFlush(done: () => void): void {
    const s = this.#conn.socket;
    if (s.writableLength === 0) process.nextTick(done);
    else s.write(EMPTY, done);
  }

  #pushFramed(out: (string | Buffer)[], body: Buffer): void {
    if (!this.#chunked) {
      out.push(body);
      return;
    }
    out.push(`${body.length.toString(16)}\r\n`, body, CRLF);
  }

  /** 'finish' once the last bytes are handed to the system (as node's), then the connection moves on. */
  readonly #onLastWrite = (err?: Error | null): void => {
    if (err || this.#closed) return;
    this.writableFinished = true;
    this.emit('finish');
    this.#close();
    this.#conn.finished(this);
  };

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.emit('close');
  }
}

function toBuffer(chunk: string | Buffer | Uint8Array, encoding: BufferEncoding | undefined): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, encoding ?? 'utf8');
  if (Buffer.isBuffer(chunk)) return chunk;
  return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

function headersSentError(what: string): Error {
  return Object.assign(new Error(`Cannot ${what} headers after they are sent to the client`), {
    code: 'ERR_HTTP_HEADERS_SENT',
  });
}
