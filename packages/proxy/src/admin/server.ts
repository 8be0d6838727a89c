// The admin interface (loopback by default, no authentication): config dump, log level, memory,
// CPU/heap profiles, in-flight tasks and graceful shutdown; plus the stats and readiness servers.
//
// Readiness and stats are two plain node:http handlers: probes and scrapes hit them from the first
// seconds of every replica. The admin API is a fastify app built on its first request, so a proxy no
// one administers never loads fastify (its module graph is about 4 MiB of each replica's idle RSS:
// 77 -> 73 MiB with one worker).
import { rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { processMetricsText } from '@gw/api/process-metrics';
import type { FastifyInstance } from 'fastify';
import { AggregatorRegistry } from 'prom-client';
import type { StartupConfig } from '../config/load.ts';
import type { LogHub } from '../observability/logger.ts';
import { parseLevelFilter } from '../observability/logger.ts';
import { heapSpaces } from '../server/heap-spaces.ts';
import { listenWith } from '../server/listen.ts';
import type { Supervisor } from '../server/supervisor.ts';
import { VERSION } from '../version.ts';
import { formatListenAddress, type ListenAddress, parseListenAddress } from './address.ts';
import { configDump, workerHealth } from './config-dump.ts';
import { refuse } from './guard.ts';

export interface AdminContext {
  supervisor: Supervisor;
  logs: LogHub;
  startup: StartupConfig;
  /** The last reload problem, shown in the config dump until a good config replaces it. */
  lastError: () => string | undefined;
  shutdown: (reason: string) => void;
}

/** A listening side server; close() stops it (and the admin app, once built). */
export interface SideServer {
  address: string | undefined;
  close: () => Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function listen(
  addr: ListenAddress,
  handler: Handler,
): Promise<{ server: http.Server; address: string | undefined }> {
  const server = http.createServer(handler);
  if (addr.kind === 'off') return { server, address: undefined };
  if (addr.kind === 'unix') rmSync(addr.path, { force: true });
  await listenWith(server, addr.kind === 'unix' ? { path: addr.path } : { host: addr.host, port: addr.port });
  const address =
    addr.kind === 'unix'
      ? formatListenAddress(addr)
      : formatListenAddress(addr, (server.address() as AddressInfo).port);
  return { server, address };
}

function closeServer(server: http.Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

function text(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/** One server of GET routes: 404 for other paths, 405 (with Allow) for other methods. */
function getRoutes(routes: Record<string, Handler>): Handler {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = routes[path];
    if (route === undefined) return text(res, 404, `no endpoint ${path}\n`);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return text(res, 405, `${req.method} ${path}: use GET\n`, { allow: 'GET, HEAD' });
    }
    route(req, res);
  };
}

export async function startAdmin(ctx: AdminContext): Promise<SideServer> {
  const bind = parseListenAddress(ctx.startup.adminAddr);
  let app: Promise<{ app: FastifyInstance; route: Handler }> | undefined;
  const { server, address } = await listen(bind, (req, res) => {
    app ??= buildAdmin(ctx, bind, server);
    const building = app;
    building.then(
      (a) => a.route(req, res),
      (err: Error) => {
        // The next request tries again.
        if (app === building) app = undefined;
        text(res, 500, `admin interface unavailable: ${err.message}\n`);
      },
    );
  });
  return {
    address,
    close: async () => {
      // fastify's preClose hooks end open trace streams; the server it was handed it leaves open.
      if (app !== undefined) await (await app.catch(() => undefined))?.app.close();
      await closeServer(server);
    },
  };
}

/** The admin API, built on the admin server's first request: fastify routes `server`'s requests. */
async function buildAdmin(
  ctx: AdminContext,
  bind: ListenAddress,
  server: http.Server,
): Promise<{ app: FastifyInstance; route: Handler }> {
  const { default: Fastify } = await import('fastify');
  let route: Handler | undefined;
  const app = Fastify({
    logger: false,
    serverFactory: (handler) => {
      route = handler;
      return server;
    },
  });
  const { supervisor, logs } = ctx;

  // Before routing: a request a web page could have made is refused whatever it asks for.
  app.addHook('onRequest', async (req, reply) => {
    const no = refuse(bind, req.headers);
    if (no) return reply.code(no.status).type('text/plain').send(`${no.message}\n`);
  });
  // A known path with the wrong method is 405 with the methods it has (GET /quitquitquit must not
  // look like a missing page, and must never shut down).
  app.setNotFoundHandler(async (req, reply) => {
    const url = req.url.split('?')[0] ?? req.url;
    const allow = (['GET', 'POST'] as const).filter((method) => app.hasRoute({ method, url }));
    reply.type('text/plain');
    if (allow.length === 0) return reply.code(404).send(`no admin endpoint ${url}\n`);
    return reply
      .code(405)
      .header('allow', allow.join(', '))
      .send(`${req.method} ${url}: use ${allow.join(' or ')}\n`);
  });

  app.get('/', async (_req, reply) => {
    reply.type('text/plain');
    return [
      'gw admin',
      '  GET  /config_dump            loaded configuration (JSON, secrets redacted)',
      '  GET  /logging                current log level',
      '  POST /logging?level=L        set log level (error|warn|info|debug|trace, or module=level,...)',
      '  GET  /memory                 process and heap memory',
      '  GET  /debug/pprof/profile    CPU profile (?seconds=1..300&frequency=1..1000&worker=N)',
      '  GET  /debug/pprof/heap       heap profile (?worker=N)',
      '  GET  /debug/tasks            in-flight requests and active handles per worker',
      '  GET  /debug/trace            SSE trace of the next request (?expression=CEL to pick one)',
      '  POST /quitquitquit           graceful shutdown',
      '',
    ].join('\n');
  });

  app.get('/config_dump', async () => {
    // The workers answer first; the running config and the last reload error are then read together,
    // so a reload that lands while the workers answer is never shown with the error it cleared.
    const health = await workerHealth(supervisor);
    return configDump(supervisor, ctx.startup, ctx.lastError(), health);
  });

  app.get('/logging', async (_req, reply) => {
    reply.type('text/plain');
    return `current log level is ${logs.filter}\n`;
  });
  app.post('/logging', async (req, reply) => {
    reply.type('text/plain');
    const level = (req.query as Record<string, string | undefined>).level;
    if (!level) return reply.code(400).send('missing query parameter level\n');
    try {
      parseLevelFilter(level);
    } catch (err) {
      return reply.code(400).send(`${(err as Error).message}\n`);
    }
    logs.setFilter(level);
    await supervisor.broadcast({ type: 'log-level', filter: level });
    return `current log level is ${logs.filter}\n`;
  });

  app.get('/memory', async () => {
    const workers = await supervisor.broadcast({ type: 'memory' });
    return {
      process: process.memoryUsage(),
      spaces: heapSpaces(),
      resourceUsage: process.resourceUsage(),
      workers,
    };
  });

  app.get('/debug/tasks', async () => ({
    main: { resources: process.getActiveResourcesInfo() },
    workers: await supervisor.broadcast({ type: 'tasks' }),
  }));

  if (process.platform === 'linux') {
    const pickWorker = (q: Record<string, string | undefined>) => {
      const n = q.worker === undefined ? 0 : Number(q.worker);
      return Number.isInteger(n) ? supervisor.workers[n] : undefined;
    };
    app.get('/debug/pprof/profile', async (req, reply) => {
      const q = req.query as Record<string, string | undefined>;
      const seconds = q.seconds === undefined ? 10 : Number(q.seconds);
      const frequency = q.frequency === undefined ? 100 : Number(q.frequency);
      if (!Number.isInteger(seconds) || seconds < 1 || seconds > 300) {
        return reply.code(400).type('text/plain').send('seconds must be an integer from 1 to 300\n');
      }
      if (!Number.isInteger(frequency) || frequency < 1 || frequency > 1000) {
        return reply.code(400).type('text/plain').send('frequency must be an integer from 1 to 1000 (Hz)\n');
      }
      const w = pickWorker(q);
      if (!w)
        return reply
          .code(400)
          .type('text/plain')
          .send(`worker must be 0..${supervisor.workers.length - 1}\n`);
      const data = await w.call<Uint8Array>({ type: 'profile', kind: 'cpu', seconds, frequency });
      return reply
        .type('application/octet-stream')
        .header('content-disposition', 'attachment; filename="cpu.pb.gz"')
        .send(Buffer.from(data));
    });
    app.get('/debug/pprof/heap', async (req, reply) => {
      const w = pickWorker(req.query as Record<string, string | undefined>);
      if (!w)
        return reply
          .code(400)
          .type('text/plain')
          .send(`worker must be 0..${supervisor.workers.length - 1}\n`);
      const data = await w.call<Uint8Array>({ type: 'profile', kind: 'heap' });
      return reply
        .type('application/octet-stream')
        .header('content-disposition', 'attachment; filename="heap.pb.gz"')
        .send(Buffer.from(data));
    });
  }

  // Open trace streams never end on their own while no request comes; a graceful shutdown must end
  // them, or closing the admin server waits for them forever.
  const traceStreams = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const end of traceStreams) end();
    done();
  });

  app.get('/debug/trace', async (req, reply) => {
    const expression = (req.query as Record<string, string | undefined>).expression;
    if (expression !== undefined) {
      try {
        // The CEL compiler loads here on a trace's first expression, not with every proxy.
        const { compileCel, useCelFunctions } = await import('../cel/cel.ts');
        // in the running config's environment (its custom functions), as the workers compile it
        const restore = useCelFunctions(supervisor.ir?.global.customFunctions);
        try {
          compileCel(expression);
        } finally {
          restore();
        }
      } catch (err) {
        return reply
          .code(400)
          .type('text/plain')
          .send(`invalid expression: ${(err as Error).message}\n`);
      }
    }
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    let done = false;
    let sub: { cancel: () => void } | undefined;
    const end = () => {
      if (done) return;
      done = true;
      traceStreams.delete(end);
      sub?.cancel();
      raw.end();
    };
    traceStreams.add(end);
    // Registered before arming: a client that leaves while the workers arm must still disarm them.
    raw.on('close', end);
    try {
      sub = await supervisor.trace((event) => {
        if (done) return;
        if (event === null) {
          done = true;
          traceStreams.delete(end);
          raw.end();
          return;
        }
        raw.write(`data: ${JSON.stringify(event)}\n\n`);
      }, expression);
    } catch {
      // The workers could not be armed (shutting down, or one is restarting): nothing will come.
      end();
      return;
    }
    if (done) {
      sub.cancel();
      return;
    }
    // Tells a client (gwctl's inject mode) that every worker is armed, so its request will be seen.
    raw.write(': armed\n\n');
  });

  // POST only: a GET can be made by any page (an <img> tag), and stopping gw is not a read.
  app.post('/quitquitquit', async (_req, reply) => {
    reply.type('text/plain');
    setImmediate(() => ctx.shutdown('admin /quitquitquit'));
    return 'shutting down\n';
  });

  await app.ready();
  if (route === undefined) throw new Error('fastify did not take the admin server');
  return { app, route };
}

export async function startStats(addr: string, supervisor: Supervisor): Promise<SideServer> {
  const metrics: Handler = (_req, res) => {
    supervisor
      .broadcast<unknown[]>({ type: 'metrics' })
      .then(async (perWorker) => {
        const registry = AggregatorRegistry.aggregate(
          perWorker as Parameters<typeof AggregatorRegistry.aggregate>[0],
        );
        const body = `${await registry.metrics()}${processMetricsText('gw', VERSION)}`;
        res.writeHead(200, {
          'content-type': registry.contentType,
          'content-length': String(Buffer.byteLength(body)),
        });
        res.end(res.req.method === 'HEAD' ? undefined : body);
      })
      .catch((err: Error) => text(res, 500, `metrics unavailable: ${err.message}\n`));
  };
  const { server, address } = await listen(
    parseListenAddress(addr),
    getRoutes({ '/metrics': metrics, '/stats/prometheus': metrics }),
  );
  return { address, close: () => closeServer(server) };
}

export async function startReadiness(addr: string, supervisor: Supervisor): Promise<SideServer> {
  const { server, address } = await listen(
    parseListenAddress(addr),
    getRoutes({
      '/healthz/ready': (_req, res) =>
        supervisor.ready ? text(res, 200, 'ready\n') : text(res, 503, 'not ready\n'),
    }),
  );
  return { address, close: () => closeServer(server) };
}
