// Loads a config file, or builds the first config an xDS controller sends, in a short-lived process
// (config/loader-process.ts) and hands the main thread the result: the IR its data-plane workers
// apply, the start-up settings, the warnings and the memory the policies share. The config
// schemas (zod, yaml) and the route compiler took some 11 MiB of the main thread's heap, kept for the
// process's life because a module is never unloaded. A worker thread would not give it back either:
// V8 keeps the pages of an exited thread's heap (13-16 MiB measured after one load) and glibc its
// malloc arena. An exited process returns everything.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { entryUrl } from '../lazy.ts';
import type { SharedMemoryNeed } from '../policies/types.ts';
import { decodeSecrets } from '../secret.ts';
import type { HeldResources, XdsOrigin } from '../xds-client/held.ts';
import type { ProxyIR } from './ir.ts';
import type { StartupConfig } from './load.ts';

// The loader process's entry: the module beside this one, or the bundle's gw-config-loader entry.
const LOADER = fileURLToPath(entryUrl(import.meta.url, './loader-process.ts', 'gw-config-loader'));

export type LoaderReply =
  | {
      ok: true;
      ir: unknown;
      startup: StartupConfig;
      policyMemory: SharedMemoryNeed[];
      warnings: string[];
      files: string[];
    }
  | { ok: false; message: string };

export interface LoadedConfigResult {
  ir: ProxyIR;
  startup: StartupConfig;
  /** The memory the config's policies share across workers, for Supervisor.apply. */
  policyMemory: SharedMemoryNeed[];
  /** Each warning formatted with its file, line and field. */
  warnings: string[];
  /** The other files the config read (LoadedConfig.files): a change to one is a change to the config. */
  files: string[];
}

/** A config that does not load: the message names the file, line and field at fault. */
export class LoadError extends Error {}

/** Decodes the loader process's reply: the config, or a LoadError with the loader's message. */
function fromReply(r: LoaderReply): LoadedConfigResult {
  if (!r.ok) throw new LoadError(r.message);
  return {
    ir: decodeSecrets(r.ir) as ProxyIR,
    startup: r.startup,
    policyMemory: r.policyMemory,
    warnings: r.warnings,
    files: r.files,
  };
}

/** Loads `file` (the embedded default config when undefined) in a process of its own. */
export function loadInChild(file: string | undefined): Promise<LoadedConfigResult> {
  return runLoader(file === undefined ? ['default'] : ['file', file]);
}

/** What config/loader-process.ts is sent, after its start, to build an xDS config (xds-client/build.ts). */
export interface XdsBuildRequest {
  held: [string, { bytes: Uint8Array } | { error: string }][];
  origin: XdsOrigin;
}

/** Builds the config of a Gateway's xDS resources in a process of its own (xds-client/build.ts). */
export function buildXdsInChild(held: HeldResources, origin: XdsOrigin): Promise<LoadedConfigResult> {
  return runLoader(['xds'], { held: [...held], origin } satisfies XdsBuildRequest);
}

function runLoader(args: string[], request?: XdsBuildRequest): Promise<LoadedConfigResult> {
  return new Promise((resolve, reject) => {
    const child = fork(LOADER, args, {
      // Structured clone, as the IR crosses to the data-plane workers, rather than JSON.
      serialization: 'advanced',
      execArgv: ['--disable-warning=ExperimentalWarning'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let reply: LoaderReply | undefined;
    child.once('message', (r: LoaderReply) => {
      reply = r;
    });
    child.once('error', (err) => reject(new Error(`cannot start the config loader: ${err.message}`)));
    child.once('exit', (code, signal) => {
      if (reply) {
        try {
          resolve(fromReply(reply));
        } catch (err) {
          reject(err);
        }
        return;
      }
      reject(new Error(`the config loader exited (${signal ?? `code ${code}`}) before answering`));
    });
    if (request !== undefined) child.send(request);
  });
}
