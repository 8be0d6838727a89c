// `gwctl`: talks to a running proxy's admin interface, or reads a saved config dump.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';

const VERSION = '0.1.0';
const USAGE = `Usage:
  gwctl version
  gwctl proxy config all [--file dump.json] [-o json|yaml|table] [-p ADMIN_PORT]
  gwctl proxy log [--level LEVEL] [-p ADMIN_PORT]

Without --file, commands talk to the admin interface at 127.0.0.1:15000 (-p to change the port).
`;

class UsageError extends Error {}

async function admin(port: number, path: string, init?: RequestInit): Promise<string> {
  let res: Response;
  try {
    res = await fetch(`http://127.0.0.1:${port}${path}`, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new Error(`cannot reach the gw admin interface at 127.0.0.1:${port} (${cause}); is gw running?`);
  }
  const text = await res.text();
  if (!res.ok) throw new Error(`admin ${path} answered ${res.status}: ${text.trim()}`);
  return text;
}

type Dump = {
  version?: string;
  routes?: {
    key: string;
    hostnames: string[];
    matches: unknown[];
    backends: { name: string; weight: number }[];
  }[];
  backends?: { name: string; target: unknown }[];
};

function table(d: Dump): string {
  const rows: string[][] = [['ROUTE', 'HOSTNAMES', 'MATCHES', 'BACKENDS']];
  for (const r of d.routes ?? []) {
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

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      file: { type: 'string' },
      output: { type: 'string', short: 'o', default: 'json' },
      port: { type: 'string', short: 'p', default: '15000' },
      level: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const port = Number(values.port);
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
    const text = values.file ? await readFile(values.file, 'utf8') : await admin(port, '/config_dump');
    let dump: Dump;
    try {
      dump = JSON.parse(text) as Dump;
    } catch (err) {
      throw new Error(`${values.file ?? 'config dump'} is not valid JSON: ${(err as Error).message}`);
    }
    if (values.output === 'yaml') process.stdout.write(stringify(dump));
    else if (values.output === 'table') process.stdout.write(table(dump));
    else if (values.output === 'json') process.stdout.write(`${JSON.stringify(dump, null, 2)}\n`);
    else throw new UsageError(`unknown output format ${values.output} (json, yaml or table)`);
    return 0;
  }
  if (cmd === 'proxy log') {
    const path = values.level ? `/logging?level=${encodeURIComponent(values.level)}` : '/logging';
    process.stdout.write(await admin(port, path, { method: values.level ? 'POST' : 'GET' }));
    return 0;
  }
  throw new UsageError(`unknown command: ${cmd}`);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: Error) => {
    process.stderr.write(`gwctl: ${err.message}\n${err instanceof UsageError ? `\n${USAGE}` : ''}`);
    process.exitCode = err instanceof UsageError ? 2 : 1;
  },
);
