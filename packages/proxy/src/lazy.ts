// A module that only some configs use, loaded the first time one does. grpc-js with the generated
// protobuf code costs about 19 MiB of RSS in every thread that imports it (the main thread and each
// worker), which a config without ext_authz over gRPC, ext_proc, a remote rate limit or xDS never needs.
import { createRequire } from 'node:module';

/**
 * A module with an entry of its own in the bundle (hack/bundle.ts). Run from the sources (`from`, the
 * caller's import.meta.url, ends in .ts) it is `source`; run from the bundle, the entry `<name>.js`
 * beside the chunk the caller is in.
 */
function entrySpecifier(from: string, source: string, name: string): string {
  return from.endsWith('.ts') ? source : `./${name}.js`;
}

/** The URL of such an entry, for a thread or process to run; `source` is relative to `from`. */
export function entryUrl(from: string, source: string, name: string): URL {
  return new URL(entrySpecifier(from, source, name), from);
}

/**
 * Such an entry loaded with require(), which is synchronous: for code that loads while a config
 * compiles, which does not wait. `source` is relative to `from` or a package's export.
 */
export function requireEntry<T>(from: string, source: string, name: string): T {
  return createRequire(from)(entrySpecifier(from, source, name)) as T;
}

export class Lazy<T> {
  /** Once loaded; the hot path reads it without awaiting. */
  value: T | undefined;
  #ready: Promise<T> | undefined;
  readonly #load: () => Promise<T>;

  constructor(load: () => Promise<T>) {
    this.#load = load;
  }

  /** Starts the load (once); a failed load is retried by the next call. */
  get ready(): Promise<T> {
    if (this.#ready === undefined) {
      this.#ready = this.#load().then(
        (v) => {
          this.value = v;
          return v;
        },
        (err: unknown) => {
          this.#ready = undefined;
          throw err;
        },
      );
    }
    return this.#ready;
  }

  /**
   * What a config makes from the module (a client, a check), loading now: its `value` is there for
   * the hot path once the module is in, and its `ready` waits for it before then.
   */
  derive<U>(make: (v: T) => U): Lazy<U> {
    const d = new Lazy(() => this.ready.then(make));
    // A failed load surfaces when a request waits on `ready`, not as an unhandled rejection now.
    d.ready.catch(() => {});
    return d;
  }
}
