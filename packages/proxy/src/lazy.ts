// A module that only some configs use, loaded the first time one does. grpc-js with the generated
// protobuf code costs about 19 MiB of RSS in every thread that imports it (the main thread and each
// worker), which a config without ext_authz over gRPC, ext_proc, a remote rate limit or xDS never needs.
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
