// Whether a gateway passes a stream on as it arrives: the fake provider holds its last event until
// the client has received the first, so a gateway that collects the stream would make the client
// wait for the watchdog instead.

/** A fake provider that can hold its last event and says when it sent it. */
export interface HoldingProvider {
  lastEventAt: number | undefined;
}

/**
 * Iterates the stream `start` opens while `hold` makes the provider wait before its last event
 * until the client has its first (or 5 s have passed); returns when each happened
 * (performance.now()).
 */
export async function firstEventBeforeLast(
  provider: HoldingProvider,
  hold: (gate: (() => Promise<void>) | undefined) => void,
  start: () => Promise<AsyncIterable<unknown>>,
): Promise<{ firstAt: number | undefined; lastAt: number | undefined }> {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  hold(() => gate);
  const watchdog = setTimeout(() => release(), 5_000);
  try {
    let firstAt: number | undefined;
    for await (const _ of await start()) {
      if (firstAt === undefined) {
        firstAt = performance.now();
        release();
      }
    }
    return { firstAt, lastAt: provider.lastEventAt };
  } finally {
    clearTimeout(watchdog);
    hold(undefined);
  }
}
