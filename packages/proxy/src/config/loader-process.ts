// Entry point of the short-lived process config/loader.ts starts for a load: it loads the file named
// by its argument (the embedded default config without one), sends the result over the IPC channel
// and exits.
import { loadAndCompile } from './load-and-compile.ts';

const send = process.send?.bind(process);
if (!send) throw new Error('loader-process.ts runs as a child of gw (config/loader.ts)');
const reply = await loadAndCompile(process.argv[2] ?? null);
send(reply, () => process.disconnect());
