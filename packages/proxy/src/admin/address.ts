// Listen addresses of the admin, stats and readiness servers: `ip:port`, `host:port`, `unix:/path`, `off`.
import { hostPort } from '@gw/api/runtime';

export type ListenAddress =
  | { kind: 'tcp'; host: string; port: number }
  | { kind: 'unix'; path: string }
  | { kind: 'off' };

export function parseListenAddress(text: string): ListenAddress {
  if (text === 'off') return { kind: 'off' };
  if (text.startsWith('unix:')) return { kind: 'unix', path: text.slice(5) };
  const i = text.lastIndexOf(':');
  let host = text.slice(0, i);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  return { kind: 'tcp', host: host === 'localhost' ? '127.0.0.1' : host, port: Number(text.slice(i + 1)) };
}

export function formatListenAddress(a: ListenAddress, boundPort?: number): string {
  if (a.kind === 'off') return 'off';
  if (a.kind === 'unix') return `unix:${a.path}`;
  return hostPort(a.host, boundPort ?? a.port);
}
