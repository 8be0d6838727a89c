// Runs private nginx instances (the proxy peer and the upstream) from generated configs in a scratch
// prefix, so nothing touches the system nginx, its ports or /var/log.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Mode } from '../scenarios/types.ts';
import { waitForHttp } from './net.ts';
import { spawnTracked, type Tracked } from './procs.ts';
import { resolveTool } from './tools.ts';

/** A complete nginx.conf around an http {} body; logging off so the peer does no more than proxy. */
export function nginxConf(prefix: string, workers: number, httpBody: string): string {
  // Workers run as root when we are root: they then can use the 0700 scratch dir for temp files.
  const user = process.getuid?.() === 0 ? 'user root;\n' : '';
  return `${user}worker_processes ${workers};
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'error.log')} warn;
events {
  worker_connections 4096;
}
http {
  access_log off;
  client_body_temp_path ${join(prefix, 'client_body')};
  proxy_temp_path ${join(prefix, 'proxy')};
  fastcgi_temp_path ${join(prefix, 'fastcgi')};
  uwsgi_temp_path ${join(prefix, 'uwsgi')};
  scgi_temp_path ${join(prefix, 'scgi')};
${httpBody}
}
`;
}

/**
 * Starts nginx with the http body in its own prefix under workDir and waits until `port` answers.
 * The pid is the master's; its workers are found through the process tree.
 */
export async function startNginx(opts: {
  name: string;
  workDir: string;
  workers: number;
  httpBody: string;
  port: number;
  cpus: string | undefined;
}): Promise<Tracked> {
  const prefix = join(opts.workDir, opts.name);
  mkdirSync(prefix, { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(conf, nginxConf(prefix, opts.workers, opts.httpBody));
  const proc = spawnTracked(
    opts.name,
    [resolveTool('nginx'), '-e', join(prefix, 'error.log'), '-p', prefix, '-c', conf, '-g', 'daemon off;'],
    { cpus: opts.cpus, logFile: join(prefix, 'stdout.log') },
  );
  await waitForHttp(`http://127.0.0.1:${opts.port}/`, proc, { timeoutMs: 10_000 });
  return proc;
}

/** nginx as a peer of a comparison: the mode's workers on the proxy's CPUs, answering on `port`. */
export function startNginxPeer(
  mode: Mode,
  workDir: string,
  httpBody: string,
  port: number,
  name = 'nginx',
): Promise<Tracked> {
  return startNginx({ name, workDir, workers: mode.workers, httpBody, port, cpus: mode.proxyCpus });
}
