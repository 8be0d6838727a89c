// Entry point of the short-lived process config/loader.ts starts for a load. Its arguments say what:
// `file PATH` loads a file, `default` the embedded default config, `xds` builds the config of the xDS
// resources its parent then sends (xds-client/build.ts). It sends the result over the IPC channel,
// secrets encoded, and exits.
import { encodeSecrets } from '../secret.ts';
import { loadAndCompile } from './load-and-compile.ts';
import type { LoadedConfigResult, LoaderReply, XdsBuildRequest } from './loader.ts';

const send = process.send?.bind(process);
if (!send) throw new Error('loader-process.ts runs as a child of gw (config/loader.ts)');
let reply: LoaderReply;
try {
  const [what, file] = process.argv.slice(2);
  const loaded =
    what === 'xds' ? await buildXds() : await loadAndCompile(what === 'default' ? null : (file ?? ''));
  reply = { ok: true, ...loaded, ir: encodeSecrets(loaded.ir) };
} catch (err) {
  // A ConfigError's message is every issue with its file, line and field.
  reply = { ok: false, message: (err as Error).message ?? String(err) };
}
send(reply, () => process.disconnect());

/** The one message the parent sends, built. */
async function buildXds(): Promise<LoadedConfigResult> {
  const request = await new Promise<XdsBuildRequest>((resolve) => process.once('message', resolve));
  const { buildXdsConfig } = await import('../xds-client/build.ts');
  return buildXdsConfig(new Map(request.held), request.origin);
}
