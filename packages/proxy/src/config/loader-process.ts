// Entry point of the short-lived process config/loader.ts starts for a load: it loads the file named
// by its argument (the embedded default config without one), sends the result over the IPC channel,
// secrets encoded, and exits.
import { encodeSecrets } from '../secret.ts';
import { loadAndCompile } from './load-and-compile.ts';
import type { LoaderReply } from './loader.ts';

const send = process.send?.bind(process);
if (!send) throw new Error('loader-process.ts runs as a child of gw (config/loader.ts)');
let reply: LoaderReply;
try {
  const loaded = await loadAndCompile(process.argv[2] ?? null);
  reply = { ok: true, ...loaded, ir: encodeSecrets(loaded.ir) };
} catch (err) {
  // A ConfigError's message is every issue with its file, line and field.
  reply = { ok: false, message: (err as Error).message ?? String(err) };
}
send(reply, () => process.disconnect());
