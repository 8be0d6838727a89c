// `gw`: the proxy. `gw` runs the embedded default config; `gw -f config.yaml` runs a file and reloads
// it on change; `gw --validate-only -f config.yaml` checks a file and exits.
import { parseArgs } from 'node:util';
import { ConfigError } from '@gw/api';
import { startAdmin, startReadiness, startStats } from './admin/server.ts';
import { DEFAULT_CONFIG, DEFAULT_CONFIG_NAME } from './config/default-config.ts';
import { type LoadedConfig, loadConfigFile, loadConfigText } from './config/load.ts';
import { LogHub, parseLevelFilter } from './observability/logger.ts';
import { compileTable } from './routing/table.ts';
import { Supervisor } from './server/supervisor.ts';
import { watchFile } from './server/watch.ts';
import { VERSION } from './version.ts';

const USAGE = `Usage: gw [-f config.yaml] [--validate-only] [--workers N]

  -f, --file FILE     run this config file (default: the embedded example config); reloaded on change
  --validate-only     check the config file and exit (0 = valid, 1 = invalid)
  --workers N         data-plane worker threads (default: config.workerThreads, else one per core)
  -V, --version       print the version
  -h, --help          this help

Environment: GW_LOG overrides config.logging.level (e.g. "info,proxy=debug").
`;

async function load(file: string | undefined): Promise<LoadedConfig> {
  const loaded = file
    ? await loadConfigFile(file)
    : loadConfigText(DEFAULT_CONFIG_NAME, DEFAULT_CONFIG, process.cwd());
  // Compile once without connecting anything, so what fails in a worker fails here first.
  compileTable(loaded.ir, null);
  return loaded;
}

function report(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
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
  let loaded: LoadedConfig;
  try {
    loaded = await load(file);
  } catch (err) {
    process.stderr.write(`gw: invalid configuration:\n${report(err)}\n`);
    return 1;
  }
  if (o['validate-only']) {
    const { binds } = loaded.ir;
    const listeners = binds.reduce((n, b) => n + b.listeners.length, 0);
    const routes = binds.reduce((n, b) => n + b.listeners.reduce((m, l) => m + l.routes.length, 0), 0);
    process.stdout.write(
      `${file ?? DEFAULT_CONFIG_NAME}: valid (${binds.length} binds, ${listeners} listeners, ${routes} routes)\n`,
    );
    return 0;
  }

  const startup = loaded.startup;
  const logFilter = process.env.GW_LOG ?? startup.logLevel;
  try {
    parseLevelFilter(logFilter);
  } catch (err) {
    process.stderr.write(`gw: ${(err as Error).message}\n`);
    return 1;
  }
  const logs = new LogHub(logFilter, startup.logFormat);
  const log = logs.module('gw');
  let workers = startup.workerThreads;
  if (o.workers !== undefined) {
    const n = Number(o.workers);
    if (!Number.isInteger(n) || n < 1) {
      process.stderr.write(`gw: --workers must be a positive integer, got ${o.workers}\n`);
      return 2;
    }
    workers = n;
  }

  const supervisor = new Supervisor({ workers, logFilter, logFormat: startup.logFormat, log });
  let lastError: string | undefined;
  let stopping = false;
  const servers: { close: () => Promise<unknown> }[] = [];
  let stopWatch = () => {};
  const done = new Promise<number>((resolveDone) => {
    const shutdown = (reason: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ reason }, 'draining');
      stopWatch();
      supervisor
        .stop(loaded.ir.global.terminationDeadlineMs)
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
        await supervisor.apply(loaded.ir);
      } catch (err) {
        process.stderr.write(`gw: cannot start: ${report(err)}\n`);
        await supervisor.stop(0);
        resolveDone(1);
        return;
      }
      try {
        const admin = await startAdmin({ supervisor, logs, startup, lastError: () => lastError, shutdown });
        const stats = await startStats(startup.statsAddr, supervisor);
        const ready = await startReadiness(startup.readinessAddr, supervisor);
        servers.push(admin.app, stats.app, ready.app);
        log.info(
          {
            version: loaded.ir.version,
            workers: supervisor.workers.length,
            listeners: (supervisor.ir?.binds ?? [])
              .map(
                (b) =>
                  `${b.address.includes(':') ? `[${b.address}]` : b.address}:${supervisor.ports[b.key] ?? b.port}`,
              )
              .join(' '),
            admin: admin.address ?? 'off',
            stats: stats.address ?? 'off',
            readiness: ready.address ?? 'off',
          },
          `gw ${VERSION} serving ${file ?? DEFAULT_CONFIG_NAME}`,
        );
      } catch (err) {
        process.stderr.write(`gw: cannot start admin servers: ${(err as Error).message}\n`);
        await supervisor.stop(0);
        resolveDone(1);
        return;
      }
      if (file) {
        // Reloads run one after another, so a slow load of an older edit never lands after a newer one.
        let reloads: Promise<void> = Promise.resolve();
        stopWatch = watchFile(file, () => {
          if (stopping) return;
          reloads = reloads.then(() => reload(file));
        });
      }
      async function reload(file: string): Promise<void> {
        if (stopping) return;
        await load(file)
          .then(async (next) => {
            if (next.ir.version === supervisor.ir?.version) {
              // The file is the running config again (a broken edit was undone): nothing to apply,
              // but the error reported for the broken edit no longer describes the file.
              lastError = undefined;
              return;
            }
            await supervisor.apply(next.ir);
            lastError = undefined;
            log.info({ version: next.ir.version }, 'configuration reloaded');
          })
          .catch((err) => {
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
