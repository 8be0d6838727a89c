// The process metrics every Prometheus client library serves (the `process_*` names of the
// client-library guidelines), plus a build-info series, as exposition text. Both binaries append it
// to their /metrics: the proxy after its workers' sum, the controller after its own counters. CPU,
// memory, threads and descriptors are the whole process's (worker threads included). The figures
// that need /proc are left out where there is none.
import { readdirSync, readFileSync } from 'node:fs';

const START_TIME_SECONDS = Date.now() / 1000 - process.uptime();

function procFile(path: string): string | undefined {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return undefined;
  }
}

function openFds(): number | undefined {
  try {
    // readdir holds a descriptor of its own on the directory while it lists it
    return readdirSync('/proc/self/fd').length - 1;
  } catch {
    return undefined;
  }
}

/** The soft limit on open files, from /proc/self/limits ("unlimited" is left out). */
export function maxFds(limits: string | undefined): number | undefined {
  const m = limits?.match(/^Max open files\s+(\d+)/m);
  return m ? Number(m[1]) : undefined;
}

/** Virtual memory size in bytes: the 23rd field of /proc/self/stat, counted after the command name. */
export function virtualMemoryBytes(stat: string | undefined): number | undefined {
  if (stat === undefined) return undefined;
  // the command name is in parentheses and may itself hold spaces or parentheses
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const v = Number(fields[20]);
  return Number.isFinite(v) ? v : undefined;
}

/** The `Threads:` line of /proc/self/status. */
export function threadCount(status: string | undefined): number | undefined {
  const m = status?.match(/^Threads:\s+(\d+)/m);
  return m ? Number(m[1]) : undefined;
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/**
 * `process_*` and `<prefix>_build_info{version,node_version}` in the Prometheus text format, each
 * family with its HELP and TYPE lines; ends with a newline.
 */
export function processMetricsText(prefix: string, version: string): string {
  const out: string[] = [];
  const add = (
    name: string,
    type: 'counter' | 'gauge',
    help: string,
    value: number | undefined,
    labels = '',
  ) => {
    if (value === undefined) return;
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name}${labels} ${value}`);
  };
  const cpu = process.cpuUsage();
  add(
    'process_cpu_user_seconds_total',
    'counter',
    'User CPU time spent by the process, in seconds',
    cpu.user / 1e6,
  );
  add(
    'process_cpu_system_seconds_total',
    'counter',
    'System CPU time spent by the process, in seconds',
    cpu.system / 1e6,
  );
  add(
    'process_cpu_seconds_total',
    'counter',
    'User and system CPU time spent by the process, in seconds',
    (cpu.user + cpu.system) / 1e6,
  );
  add('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes', process.memoryUsage.rss());
  add(
    'process_virtual_memory_bytes',
    'gauge',
    'Virtual memory size in bytes',
    virtualMemoryBytes(procFile('/proc/self/stat')),
  );
  add('process_open_fds', 'gauge', 'Open file descriptors', openFds());
  add(
    'process_max_fds',
    'gauge',
    'The limit on open file descriptors',
    maxFds(procFile('/proc/self/limits')),
  );
  add('process_threads', 'gauge', 'OS threads in the process', threadCount(procFile('/proc/self/status')));
  add(
    'process_start_time_seconds',
    'gauge',
    'Start time of the process since the Unix epoch, in seconds',
    START_TIME_SECONDS,
  );
  add(
    `${prefix}_build_info`,
    'gauge',
    'Always 1: the version running, and the Node.js it runs on',
    1,
    `{version="${escapeLabel(version)}",node_version="${escapeLabel(process.version)}"}`,
  );
  return `${out.join('\n')}\n`;
}
