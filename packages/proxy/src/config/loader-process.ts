// Entry point of the short-lived process config/loader.ts starts for each load: it loads the file
// named by its one argument ("-" for the embedded default config), sends the result over the IPC
// channel and exits.
import { loadAndCompile } from './load-and-compile.ts';

const send = process.send?.bind(process);
if (!send) throw new Error('loader-process.ts runs as a child of gw (config/loader.ts)');
const arg = process.argv[2];
const reply = await loadAndCompile(arg === undefined || arg === '-' ? null : arg);
send(reply, () => process.disconnect());
