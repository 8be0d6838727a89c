// `gw`: the proxy. `gw` runs the embedded default config; `gw -f config.yaml` runs a file and reloads
// it on change; `gw --validate-only -f config.yaml` checks a file and exits; `gw --xds-address URL
// --gateway NS/NAME` takes its config from the controller over xDS.
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { hostPort } from '@gw/api/runtime';
import { startAdmin, startReadiness, startStats } from './admin/server.ts';
import { DEFAULT_CONFIG_NAME } from './config/default-config.ts';
import type { StartupConfig } from './config/load.ts';
import { buildXdsInChild, type LoadedConfigResult, loadInChild } from './config/loader.ts';
import { LogHub, parseLevelFilter } from './observability/logger.ts';
import { http1ServerKind } from './server/http1-kind.ts';
import { trimNow, trimWhenQuiet } from './server/idle-trim.ts';
import { Supervisor } from './server/supervisor.ts';
import { watchFile } from './server/watch.ts';
import { VERSION } from './version.ts';
import { parseXdsAddress } from './xds-client/address.ts';
import type { XdsClient } from './xds-client/client.ts';

const USAGE = `Usage: gw [-f config.yaml] [--validate-only] [--workers N] [--admin-addr ADDR ...]
       gw --xds-address URL --gateway NAMESPACE/NAME [--xds-token-file FILE] [--workers N]

  -f, --file FILE     run this config file (default: the embedded example config); reloaded when it,
                      or a file it reads (certificates, keys, ...), changes, and on SIGHUP
  --validate-only     check the config file and exit (0 = valid, 1 = invalid)
  --workers N         data-plane worker threads (default: config.workerThreads, else one per core)
  --admin-addr, --stats-addr, --readiness-addr ADDR
                      ip:port, unix:/path or off, over the config: block's (adminAddr, statsAddr,
                      readinessAddr; defaults 127.0.0.1:15000, 0.0.0.0:15020, 0.0.0.0:15021)
  -V, --version       print the version
  -h, --help          this help

xDS (config from the controller instead of a file; not ready until the first config arrives):
  --xds-address URL       http://host:port (plaintext) or https://host:port (TLS)   [GW_XDS_ADDRESS]
  --gateway NS/NAME       the Gateway this proxy serves                              [GW_GATEWAY]
  --xds-token-file FILE   bearer token sent to the controller, re-read on reconnect  [GW_XDS_TOKEN_FILE]
  --xds-ca-file FILE      CA bundle for an https:// address (default system roots)  [GW_XDS_CA_FILE]
  kill -HUP               reconnect at once when waiting between tries (SIGHUP never ends gw)

Environment: GW_LOG overrides config.logging.level (e.g. "info,proxy=debug"); in xDS mode
GW_LOG_FORMAT=json writes JSON log lines (default text).
`;

/** The admin, stats and readiness addresses the command line sets. */
function addressFlags(o: {
  'admin-addr'?: string;
  'stats-addr'?: string;
  'readiness-addr'?: string;
}): Partial<Pick<StartupConfig, 'adminAddr' | 'statsAddr' | 'readinessAddr'>> {
  return {
    ...(o['admin-addr'] !== undefined ? { adminAddr: o['admin-addr'] } : {}),
    ...(o['stats-addr'] !== undefined ? { statsAddr: o['stats-addr'] } : {}),
    ...(o['readiness-addr'] !== undefined ? { readinessAddr: o['readiness-addr'] } : {}),
  };
}

/** Start-up settings in xDS mode, where there is no file: flags, else the documented defaults. */
function xdsStartup(o: {
  'admin-addr'?: string;
  'stats-addr'?: string;
  'readiness-addr'?: string;
}): StartupConfig {
  return {
    adminAddr: o['admin-addr'] ?? '127.0.0.1:15000',
    statsAddr: o['stats-addr'] ?? '0.0.0.0:15020',
    readinessAddr: o['readiness-addr'] ?? '0.0.0.0:15021',
    workerThreads: 'auto',
    logLevel: 'info',
    // the deployer sets it from GwParameters logging.format
    logFormat: process.env.GW_LOG_FORMAT === 'json' ? 'json' : 'text',
  };
}

const env = (name: string): string | undefined => process.env[name] || undefined;

/** Loads, validates and compiles a config in this thread, the first call loading the code for it. */
async function loadHere(file: string | undefined): Promise<LoadedConfigResult> {
  const { loadAndCompile } = await import('./config/load-and-compile.ts');
  return await loadAndCompile(file ?? null);
}

function report(err: unknown): string {
  return (err as Error).message ?? String(err);
}

export async function main(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parse>;
  const parse = (a: string[]) =>
    parseArgs({
      args: a,
      options: {
        file: { type: 'string', short: 'f' },
        'validate-only': { type: 'boolean' },
        workers: { type: 'string' },
        'xds-address': { type: 'string' },
        gateway: { type: 'string' },
        'xds-token-file': { type: 'string' },
        'xds-ca-file': { type: 'string' },
        'admin-addr': { type: 'string' },
        'stats-addr': { type: 'string' },
        'readiness-addr': { type: 'string' },
        version: { type: 'boolean', short: 'V' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
  try {
    args = parse(argv);
  } catch (err) {
    process.stderr.write(`gw: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const o = args.values;
  if (o.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (o.version) {
    process.stdout.write(`gw ${VERSION} (node ${process.versions.node})\n`);
    return 0;
  }
  const file = o.file;
  const xdsAddress = o['xds-address'] ?? env('GW_XDS_ADDRESS');
  const gateway = o.gateway ?? env('GW_GATEWAY');
  const tokenFile = o['xds-token-file'] ?? env('GW_XDS_TOKEN_FILE');
  const caFile = o['xds-ca-file'] ?? env('GW_XDS_CA_FILE');
  const xds = xdsAddress !== undefined;
  if (xds && (file !== undefined || o['validate-only'])) {
    process.stderr.write('gw: --xds-address takes the config from the controller; drop -f/--validate-only\n');
    return 2;
  }
  if (xds) {
    try {
      parseXdsAddress(xdsAddress);
    } catch (err) {
      process.stderr.write(`gw: ${(err as Error).message}\n`);
      return 2;
    }
  }
  if (xds && (gateway === undefined || !/^[^/\s]+\/[^/\s]+$/.test(gateway))) {
    process.stderr.write('gw: --xds-address needs --gateway <namespace>/<name> (or GW_GATEWAY)\n');
    return 2;
  }
  // `kill -HUP` never ends gw (node's default would): with -f it reloads the file, over xDS it
  // reconnects at once if it is waiting to, and the embedded config has nothing to reload. One that
  // comes while starting is answered once start-up has set what it does.
  let hangUpWhileStarting = false;
  let onHangUp = () => {
    hangUpWhileStarting = true;
  };
  const onSighup = () => onHangUp();
  if (!o['validate-only']) process.on('SIGHUP', onSighup);
  // In xDS mode nothing is loaded up front: the first config comes from the controller.
  let loaded: LoadedConfigResult | undefined;
  if (!xds) {
    try {
      // Read, validated and compiled before any worker starts, so what fails in a worker fails here
      // first: in place for --validate-only, else in a process of its own (config/loader.ts), so a
      // proxy whose file never changes does not keep the schemas and the compiler in this thread.
      loaded = o['validate-only'] ? await loadHere(file) : await loadInChild(file);
    } catch (err) {
      process.stderr.write(`gw: invalid configuration:\n${report(err)}\n`);
      return 1;
    }
  }
  for (const w of loaded?.warnings ?? []) process.stderr.write(`gw: warning: ${w}\n`);
  if (loaded && o['validate-only']) {
    const { binds } = loaded.ir;
    const listeners = binds.reduce((n, b) => n + b.listeners.length, 0);
    const routes = binds.reduce((n, b) => n + b.listeners.reduce((m, l) => m + l.routes.length, 0), 0);
    process.stdout.write(
      `${file ?? DEFAULT_CONFIG_NAME}: valid (${binds.length} binds, ${listeners} listeners, ${routes} routes)\n`,
    );
    return 0;
  }

  // the address flags win over the file's config: block (e.g. to run an example beside another gw)
  const startup = loaded ? { ...loaded.startup, ...addressFlags(o) } : xdsStartup(o);
  const logFilter = process.env.GW_LOG ?? startup.logLevel;
  try {
    parseLevelFilter(logFilter);
    http1ServerKind();
  } catch (err) {
    process.stderr.write(`gw: ${(err as Error).message}\n`);
    return 1;
  }
  const logs = new LogHub(logFilter, startup.logFormat);
  const log = logs.module('gw');
  if (!file && !xds) {
    onHangUp = () => log.info('SIGHUP: nothing to reload (the embedded config)');
    if (hangUpWhileStarting) onHangUp();
  }
  // MCP session ids and oidc cookies are sealed with config.session.key, else SESSION_KEY; without
  // either, a key for this process's life. Set before the workers start so they all share it
  // (sessions then end with the process); a reload that changes it is warned about (sessions sealed
  // with the running key would all end at once).
  const sessionKey = loaded?.ir.global.sessionKey?.reveal();
  if (sessionKey) process.env.SESSION_KEY = sessionKey;
  else if (!process.env.SESSION_KEY) process.env.SESSION_KEY = randomBytes(32).toString('base64');
  let workers = startup.workerThreads;
  if (o.workers !== undefined) {
    const n = Number(o.workers);
    if (!Number.isInteger(n) || n < 1) {
      process.stderr.write(`gw: --workers must be a positive integer, got ${o.workers}\n`);
      return 2;
    }
    workers = n;
  }

  const supervisor = new Supervisor({
    workers,
    logFilter,
    logFormat: startup.logFormat,
    log,
    oneInProcess: true,
  });
  // A data plane in this thread trims it itself, and never once it has served traffic.
  if (!supervisor.inProcess) {
    trimWhenQuiet((t) =>
      log.debug({ ms: Math.round(t.lastMs), freedBytes: t.lastFreedBytes }, 'idle memory trim'),
    );
  }
  let lastError: string | undefined;
  let stopping = false;
  const servers: { close: () => Promise<unknown> }[] = [];
  let stopWatch = () => {};
  /**
   * Watches the config file and these files it read, and no others; `failed`: files a load that
   * failed tried to read, watched beside the running config's.
   */
  let watchConfigFiles: (files: string[], failed?: boolean) => void = () => {};
  let xdsClient: XdsClient | undefined;
  const done = new Promise<number>((resolveDone) => {
    const shutdown = (reason: string) => {
      if (stopping) return;
      stopping = true;
      // Both deadlines count from the signal: the listeners stay open for the minimum (readiness
      // already failing, so endpoints and load balancers drop this replica before it refuses
      // connections), then close, and in-flight requests get what is left of the maximum.
      const deadline = supervisor.ir?.global.terminationDeadlineMs ?? 30_000;
      const min = Math.min(supervisor.ir?.global.terminationMinMs ?? 0, deadline);
      log.info({ reason, ...(min > 0 ? { minMs: min } : {}) }, 'draining');
      supervisor.beginStop();
      stopWatch();
      xdsClient?.close();
      new Promise((r) => setTimeout(r, min))
        .then(() => supervisor.stop(deadline - min))
        .then(async (cut) => {
          await Promise.allSettled(servers.map((s) => s.close()));
          log.info({ cut }, 'stopped');
          logs.root.flush();
          resolveDone(0);
        })
        .catch(() => resolveDone(1));
    };
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    process.on('SIGINT', () => shutdown('SIGINT'));

    (async () => {
      try {
        if (loaded) await supervisor.apply(loaded.ir, loaded.policyMemory);
      } catch (err) {
        process.stderr.write(`gw: cannot start: ${report(err)}\n`);
        await supervisor.stop(0);
        resolveDone(1);
        return;
      }
      try {
        const admin = await startAdmin({ supervisor, logs, startup, lastError: () => lastError, shutdown });
        // internal backends (routes to the admin API) send their requests there
        await supervisor.setAdminAddress(admin.address);
        const stats = await startStats(startup.statsAddr, supervisor);
        // Start-up's garbage goes before readiness invites traffic (with one worker, the data plane's
        // too: it runs in this thread).
        const trim = trimNow();
        if (trim) log.debug({ ms: Math.round(trim.ms), freedBytes: trim.freedBytes }, 'start-up memory trim');
        const ready = await startReadiness(startup.readinessAddr, supervisor);
        servers.push(admin, stats, ready);
        log.info(
          {
            version: loaded?.ir.version ?? 'none yet',
            workers: supervisor.workers.length,
            ...(supervisor.inProcess ? { dataPlane: 'main thread' } : {}),
            listeners: (supervisor.ir?.binds ?? [])
              .map((b) => (b.internal ? b.key : hostPort(b.address, supervisor.ports[b.key] ?? b.port)))
              .join(' '),
            admin: admin.address ?? 'off',
            stats: stats.address ?? 'off',
            readiness: ready.address ?? 'off',
          },
          `gw ${VERSION} serving ${xds ? `xds ${xdsAddress} gateway ${gateway}` : (file ?? DEFAULT_CONFIG_NAME)}`,
        );
      } catch (err) {
        process.stderr.write(`gw: cannot start admin servers: ${(err as Error).message}\n`);
        await supervisor.stop(0);
        resolveDone(1);
        return;
      }
      if (xds) {
        // grpc-js and the generated xDS messages: only a proxy fed over xDS loads them.
        const { startXdsClient } = await import('./xds-client/client.ts');
        let applied = false;
        xdsClient = startXdsClient({
          address: xdsAddress as string,
          gateway: gateway as string,
          ...(tokenFile !== undefined ? { tokenFile } : {}),
          ...(caFile !== undefined ? { caFile } : {}),
          log: logs.module('xds'),
          // Until a config is running, in a process of its own, as a file is loaded at start-up: the
          // config schemas and the compiler stay out of this thread. Updates after that are built in
          // this thread, as a file's reloads are (a process each would add half a second to each).
          build: async (held, origin) => {
            if (!applied) return await buildXdsInChild(held, origin);
            const { buildXdsConfig } = await import('./xds-client/build.ts');
            return buildXdsConfig(held, origin);
          },
          // Worker 0 compiles it first: a config it refuses reaches no other worker (Supervisor.apply).
          onConfig: async ({ ir, policyMemory }) => {
            if (stopping) return;
            await supervisor.apply(ir, policyMemory);
            applied = true;
            lastError = undefined;
          },
          onReject: (message) => {
            lastError = message;
          },
        });
        const client = xdsClient;
        onHangUp = () => {
          if (client.retryNow()) log.info('SIGHUP: reconnecting to the controller now');
          else
            log.info(
              { state: client.state, version: client.version ?? 'none yet' },
              'SIGHUP: nothing to do (the config comes from the controller, which pushes each change)',
            );
        };
        if (hangUpWhileStarting) onHangUp();
      }
      if (file) {
        // Reloads run one after another, so a slow load of an older edit never lands after a newer one.
        let reloads: Promise<void> = Promise.resolve();
        const changed = () => {
          if (stopping) return;
          reloads = reloads.then(() => reload(file));
        };
        // The config file and the files it reads (certificates, keys, JWKS, ...): a certificate
        // renewed in place applies as an edit of the config does. The set follows each config loaded.
        const watched = new Map<string, () => void>();
        /** The files the running config read. */
        let running: string[] = [];
        watchConfigFiles = (files, failed = false) => {
          // a load that ends after shutdown began starts no watchers
          if (stopping) return;
          if (!failed) running = files;
          // those a failed load tried are watched too: the certificate it missed may be written later
          const want = new Set([resolve(file), ...running, ...(failed ? files : [])]);
          for (const [f, stop] of watched)
            if (!want.has(f)) {
              stop();
              watched.delete(f);
            }
          for (const f of want) {
            if (watched.has(f)) continue;
            try {
              watched.set(f, watchFile(f, changed));
            } catch (err) {
              // its directory is not there (a model catalog not written yet): the next reload tries again
              log.debug({ file: f, error: (err as Error).message }, 'cannot watch a file the config reads');
            }
          }
        };
        watchConfigFiles(loaded?.files ?? []);
        // `kill -HUP`: reload now, changed or not, for filesystems that report no changes (NFS, some
        // container bind mounts) and for scripts that want to know the file was read.
        onHangUp = () => {
          if (stopping) return;
          log.info({ file }, 'SIGHUP: reloading the config');
          reloads = reloads.then(() => reload(file, true));
        };
        if (hangUpWhileStarting) onHangUp();
        stopWatch = () => {
          for (const stop of watched.values()) stop();
          watched.clear();
        };
      }
      /** `requested`: by SIGHUP, which is answered even when nothing changed. */
      async function reload(file: string, requested = false): Promise<void> {
        if (stopping) return;
        // In this thread: a new process per edit took about half a second (100 edits applied one after
        // another in e2e/standalone.test.ts went past a minute). The schemas stay loaded from the
        // first reload on.
        await loadHere(file)
          .then(async (next) => {
            watchConfigFiles(next.files);
            if (next.ir.version === supervisor.ir?.version) {
              // The file is the running config again (a broken edit was undone): nothing to apply,
              // but the error reported for the broken edit no longer describes the file.
              lastError = undefined;
              if (requested) log.info({ version: next.ir.version }, 'configuration unchanged');
              return;
            }
            await supervisor.apply(next.ir, next.policyMemory);
            lastError = undefined;
            for (const w of next.warnings) log.warn(`configuration warning: ${w}`);
            if (next.ir.global.sessionKey?.reveal() !== sessionKey)
              log.warn(
                'config.session.key changed: it applies when gw restarts (the running key seals sessions until then)',
              );
            log.info({ version: next.ir.version }, 'configuration reloaded');
          })
          .catch((err) => {
            const tried = (err as { files?: unknown }).files;
            if (Array.isArray(tried)) watchConfigFiles(tried as string[], true);
            lastError = report(err);
            log.error(
              `configuration change rejected, keeping version ${supervisor.ir?.version}:\n${lastError}`,
            );
          });
      }
    })();
  });
  return await done;
}

if (import.meta.main) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
    // Workers are gone by now; leave anything else (timers in libraries) to die with the process.
    setTimeout(() => process.exit(code), 200).unref();
  });
}
