// Which HTTP/1.1 server plain-text binds run (GW_HTTP1_SERVER). A module of its own so that the main
// thread can check the variable at start-up without loading the servers.

/** GW_HTTP1_SERVER: `net` serves HTTP/1.1 on plain-text binds with H1Server; `node` (the default), node:http. */
export function http1ServerKind(env: NodeJS.ProcessEnv = process.env): 'node' | 'net' {
  const v = env['GW_HTTP1_SERVER'];
  if (v === undefined || v === '' || v === 'node') return 'node';
  if (v === 'net') return 'net';
  throw new Error(`GW_HTTP1_SERVER must be "node" or "net" (got ${JSON.stringify(v)})`);
}
