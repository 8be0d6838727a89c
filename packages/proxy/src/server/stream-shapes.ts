// Gives V8 the hidden classes (maps) of errored streams before the hot path is compiled.
//
// node keeps a stream's error in a property its state objects only gain when the stream errors
// (`kErroredValue`, node 24: set through the `errored` setters of ReadableState and WritableState).
// Until the first stream of the thread errors, every ReadableState and WritableState has a map with
// no way out (a leaf), and V8's optimizing compilers trust such a map never to change: the compiled
// code of stream, http, undici and gw functions skips its checks on it. The first error, typically
// the first client to reset a connection or cancel a stream, adds the property, the map gains a
// transition, and V8 throws away all of that code at once (some 90 functions under `--trace-deopt`,
// "dependent prototype chain changed"), which then runs unoptimized until it is hot again. At the
// rates of LLM traffic that can take minutes (bench/TAIL.md).
//
// So each data-plane thread errors one stream of each common state shape at start, before any code
// is optimized, and keeps their states alive. At start they are the only streams with those maps:
// let go, V8 frees the maps and their transitions, and the streams that come later build new ones,
// leaves again (`--log-maps` showed it: an unkept first version changed nothing).
import { Readable, Writable } from 'node:stream';

const kept: object[] = [];

/** Idempotent per thread; costs a few microseconds and a few hundred bytes. */
export function primeStreamShapes(): void {
  if (kept.length > 0) return;
  const noop = () => {};
  const fail = (s: Readable | Writable) => {
    s.on('error', noop);
    s.destroy(new Error('priming stream shapes'));
    const state =
      (s as { _readableState?: object; _writableState?: object })._readableState ??
      (s as { _writableState?: object })._writableState;
    if (state) kept.push(state);
  };
  // a readable side, as sockets, requests and response bodies have it
  fail(new Readable({ read() {} }));
  // a writable side at the points a connection usually errors: before any write, with a write in
  // flight (its callback kept), after a write completed in the same tick (afterWriteTickInfo), and
  // once ended and finished
  fail(new Writable({ write: (_c, _e, cb) => cb() }));
  const inFlight = new Writable({ write: () => {} });
  inFlight.write('x', noop);
  fail(inFlight);
  const completed = new Writable({ write: (_c, _e, cb) => cb() });
  completed.write('x', noop);
  fail(completed);
  const finished = new Writable({ write: (_c, _e, cb) => cb() });
  finished.on('finish', () => fail(finished));
  finished.end('x');
}
