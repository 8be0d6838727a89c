// Plain request/response calls to a proxy's admin interface on loopback, with errors a user can act on.
// node:http rather than fetch: fetch refuses some ports (6000, 6667, ...) an admin interface may use.
import http from 'node:http';
import { adminUnreachable, causeOf, GwctlError } from './errors.ts';

export interface AdminCallOptions {
  method?: string;
  timeoutMs?: number;
}

export function adminBytes(port: number, path: string, opts: AdminCallOptions = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request(
      { host: '127.0.0.1', port, path, method: opts.method ?? 'GET', agent: false },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(body);
          else
            reject(
              new GwctlError(
                'GWCTL_ERR_ADMIN_STATUS',
                `admin ${path} answered ${status}: ${body.toString('utf8').trim()}`,
              ),
            );
        });
        res.on('error', (err) =>
          reject(
            new GwctlError('GWCTL_ERR_ADMIN_STATUS', `admin ${path} broke off its answer (${causeOf(err)})`),
          ),
        );
      },
    );
    let timer: NodeJS.Timeout | undefined;
    if (opts.timeoutMs !== undefined) {
      const ms = opts.timeoutMs;
      timer = setTimeout(() => {
        req.destroy();
        reject(new GwctlError('GWCTL_ERR_ADMIN_STATUS', `admin ${path} did not answer within ${ms} ms`));
      }, ms);
    }
    req.on('close', () => clearTimeout(timer));
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(
        answered
          ? new GwctlError('GWCTL_ERR_ADMIN_STATUS', `admin ${path} broke off its answer (${causeOf(err)})`)
          : adminUnreachable(port, causeOf(err)),
      );
    });
    req.end();
  });
}

export async function adminText(port: number, path: string, opts: AdminCallOptions = {}): Promise<string> {
  return (await adminBytes(port, path, opts)).toString('utf8');
}
