// `gwctl`: talks to a running proxy's admin interface (config, log level, traces, profiles), or reads
// a saved config dump. This file parses the command line; each command lives in its own module.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ConfigDump } from '@gw/api/admin/config-dump';
import { readWire } from '@gw/api/admin/wire';
import { stringify } from 'yaml';
import { adminText } from './admin-client.ts';
import { GwctlError, usageError } from './errors.ts';
import { GATEWAY_NAME_LABEL } from './gateway-pods.ts';
import { PROXY_ADMIN_PORT, runGatewayTrace } from './gateway-trace.ts';
import { CURL_HELP } from './inject-request.ts';
import { runProfile } from './profile-command.ts';
import { runTrace } from './trace-command.ts';

const VERSION = '0.1.0';
const USAGE = `Usage:
  gwctl version
  gwctl proxy config all [--file dump.json] [-o json|yaml|table] [-p ADMIN_PORT]
  gwctl proxy log [--level LEVEL] [-p ADMIN_PORT]
  gwctl proxy trace [--local] [--raw] [--expression CEL] [-p ADMIN_PORT] [--port PORT -- <url> [curl args]]
  gwctl proxy profile cpu|heap [--local] [--seconds N] [-o FILE] [-p ADMIN_PORT]
  gwctl trace gateway/<name> [-n NAMESPACE] [--context CONTEXT] [--raw] [--expression CEL] [--port PORT -- <url> [curl args]]

Without --file, commands talk to the admin interface at 127.0.0.1:15000 (-p to change the port).
proxy trace without a URL waits for the next request from any client (watch mode); with --port and
a URL after -- it arms tracing, then sends that request to 127.0.0.1:PORT itself (inject mode); the
URL's host is only the Host header. --raw prints JSON Lines; otherwise an interactive view opens
(tab switch pane, arrows move/scroll, e/s/d event/snapshot/diff, q quit).
trace gateway/<name> does the same in a cluster: with the kubeconfig (KUBECONFIG, ~/.kube/config or
in-cluster; --context to pick one) it finds the newest ready proxy pod labelled
${GATEWAY_NAME_LABEL}=<name> in the namespace (-n, else the context's, else default),
port-forwards to its admin port ${PROXY_ADMIN_PORT}, and in inject mode sends the request to the pod's port PORT.
${CURL_HELP}
proxy profile writes a gzipped pprof file (CPU: 30 s unless --seconds; default name
cpu-YYYYMMDD-HHMMSS.pb.gz or heap-...) and prints its path; open it with go tool pprof.
`;

function table(d: ConfigDump): string {
  const rows: string[][] = [['ROUTE', 'HOSTNAMES', 'MATCHES', 'BACKENDS']];
  for (const r of d.routes) {
    rows.push([
      r.key,
      r.hostnames.join(',') || '*',
      String(r.matches.length),
      r.backends.map((b) => `${b.name}${b.weight !== 1 ? `(${b.weight})` : ''}`).join(',') || '-',
    ]);
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return `${rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

function portOption(name: string, value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw usageError(`${name} ${value}: expected a port from 1 to 65535`);
  return n;
}

function parse(argv: string[]) {
  // Everything after the first `--` is the traced request (a URL and curl arguments), never ours.
  const dash = argv.indexOf('--');
  const own = dash === -1 ? argv : argv.slice(0, dash);
  try {
    const { values, positionals } = parseArgs({
      args: own,
      allowPositionals: true,
      options: {
        file: { type: 'string' },
        output: { type: 'string', short: 'o' },
        'admin-port': { type: 'string', short: 'p' },
        port: { type: 'string' },
        level: { type: 'string' },
        raw: { type: 'boolean' },
        local: { type: 'boolean' },
        seconds: { type: 'string' },
        expression: { type: 'string' },
        namespace: { type: 'string', short: 'n' },
        context: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    return { values, positionals, curl: dash === -1 ? undefined : argv.slice(dash + 1) };
  } catch (err) {
    throw usageError((err as Error).message);
  }
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals, curl } = parse(argv);
  // For config and log, --port has always meant the admin port; for trace it is the listener port.
  const legacyAdminPort = () =>
    values['admin-port'] !== undefined
      ? (portOption('-p', values['admin-port']) as number)
      : (portOption('--port', values.port, 15000) as number);
  const adminPort = portOption('-p', values['admin-port'], 15000) as number;
  const cmd = positionals.join(' ');
  if (values.help || cmd === '') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (cmd === 'version') {
    process.stdout.write(`gwctl ${VERSION} (node ${process.versions.node})\n`);
    return 0;
  }
  if (cmd === 'proxy config all' || cmd === 'proxy config') {
    const text = values.file
      ? await readFile(values.file, 'utf8')
      : await adminText(legacyAdminPort(), '/config_dump');
    const read = readWire(ConfigDump, text);
    if (!read.ok) {
      const what = values.file ?? 'the config dump';
      throw new Error(
        read.problem === 'json'
          ? `${what} is not valid JSON: ${read.detail}`
          : `${what} is not a gw config dump: ${read.detail}`,
      );
    }
    // Printed as the proxy wrote it, fields this gwctl does not know included.
    const dump = read.json;
    const format = values.output ?? 'json';
    if (format === 'yaml') process.stdout.write(stringify(dump));
    else if (format === 'table') process.stdout.write(table(read.value));
    else if (format === 'json') process.stdout.write(`${JSON.stringify(dump, null, 2)}\n`);
    else throw usageError(`unknown output format ${format} (json, yaml or table)`);
    return 0;
  }
  if (cmd === 'proxy log') {
    const path = values.level ? `/logging?level=${encodeURIComponent(values.level)}` : '/logging';
    process.stdout.write(await adminText(legacyAdminPort(), path, { method: values.level ? 'POST' : 'GET' }));
    return 0;
  }
  if (cmd === 'proxy trace') {
    return await runTrace({
      adminPort,
      listenerPort: portOption('--port', values.port),
      expression: values.expression,
      raw: values.raw === true,
      curl,
      target: `admin 127.0.0.1:${adminPort}`,
    });
  }
  if (positionals[0] === 'proxy' && positionals[1] === 'profile' && positionals.length <= 3) {
    return await runProfile({
      kind: positionals[2],
      adminPort,
      seconds: values.seconds,
      output: values.output,
    });
  }
  if (positionals[0] === 'trace' && positionals.length <= 2) {
    return await runGatewayTrace({
      target: positionals[1],
      namespace: values.namespace,
      context: values.context,
      raw: values.raw === true,
      listenerPort: portOption('--port', values.port),
      expression: values.expression,
      curl,
    });
  }
  if (positionals[0] === 'proxy' && positionals[1] === 'trace') {
    throw usageError(`unexpected ${positionals.slice(2).join(' ')}: put the URL and curl arguments after --`);
  }
  throw usageError(`unknown command: ${cmd}`);
}

// A reader that stops early (`gwctl proxy trace --raw | head`) closes the pipe, and every later write
// fails with EPIPE. As with `git log | head`, that ends gwctl quietly: nobody is left to read the rest.
// Any other write error still ends gwctl with its stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(0);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: Error) => {
    const usage = err instanceof GwctlError && err.code === 'GWCTL_ERR_USAGE';
    process.stderr.write(`gwctl: ${err.message}\n${usage ? `\n${USAGE}` : ''}`);
    process.exitCode = err instanceof GwctlError ? err.exit : 1;
  },
);
