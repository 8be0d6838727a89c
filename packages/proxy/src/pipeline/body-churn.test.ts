import assert from 'node:assert/strict';
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CHURN_BYTES } from './body-churn.ts';

// The data plane runs in a child process (--expose-gc or not) so that its collections and buffer
// memory are its own; the upstream and the client, here, move the bytes.

const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'x');

/** Reads the request body, answers `answer` bytes in 64 KiB writes. */
async function startUpstream(answer: number): Promise<{ port: number; received: number[]; close(): void }> {
  const received: number[] = [];
  const server = http.createServer(async (req, res) => {
    let n = 0;
    for await (const c of req) n += (c as Buffer).length;
    received.push(n);
    res.writeHead(200, { 'content-length': answer });
    for (let left = answer; left > 0; left -= CHUNK.length) {
      if (!res.write(left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left))) await once(res, 'drain');
    }
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    received,
    close: () => server.close(),
  };
}

interface ChildReport {
  collections: number;
  peakArrayBuffers: number;
}

/** A data plane on port 0 in a child process, routing everything to `upstreamPort`. */
async function startChild(
  flags: string[],
  upstreamPort: number,
): Promise<{ port: number; report(): Promise<ChildReport>; child: ChildProcess }> {
  const child = fork(fileURLToPath(new URL('./body-churn.test-child.ts', import.meta.url)), [], {
    execArgv: [...flags, '--disable-warning=ExperimentalWarning'],
    env: { ...process.env, UPSTREAM_PORT: String(upstreamPort) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [ready] = (await once(child, 'message')) as [{ port: number }];
  return {
    port: ready.port,
    child,
    report: async () => {
      child.send('report');
      const [r] = (await once(child, 'message')) as [ChildReport];
      return r;
    },
  };
}

/** POSTs `size` bytes over HTTP/1.1 and returns the answer's length. */
async function post1(port: number, size: number): Promise<number> {
  const req = http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/',
    headers: { 'content-length': size },
  });
  const answered = once(req, 'response');
  for (let left = size; left > 0; left -= CHUNK.length) {
    if (!req.write(left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left))) await once(req, 'drain');
  }
  req.end();
  const [res] = (await answered) as [http.IncomingMessage];
  let n = 0;
  for await (const c of res) n += (c as Buffer).length;
  return n;
}

/** The same over h2c (prior knowledge). */
async function post2(port: number, size: number): Promise<number> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    const stream = session.request({ ':method': 'POST', ':path': '/', 'content-length': String(size) });
    for (let left = size; left > 0; left -= CHUNK.length) {
      if (!stream.write(left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left))) await once(stream, 'drain');
    }
    stream.end();
    let n = 0;
    for await (const c of stream) n += (c as Buffer).length;
    return n;
  } finally {
    session.close();
  }
}

test('bodies passing through count towards a scavenge every CHURN_BYTES, both ways, HTTP/1.1 and h2c', async (t) => {
  const up = await startUpstream(16 * MiB);
  t.after(() => up.close());
  const gw = await startChild(['--expose-gc'], up.port);
  t.after(() => gw.child.kill());

  // 4 transfers of 16 MiB each way: 128 MiB through the data plane, 64 scavenges' worth at 2 MiB.
  const answers = await Promise.all([post1(gw.port, 16 * MiB), post1(gw.port, 16 * MiB)]);
  answers.push(await post2(gw.port, 16 * MiB), await post2(gw.port, 16 * MiB));
  assert.deepEqual(answers, [16 * MiB, 16 * MiB, 16 * MiB, 16 * MiB], 'every answer arrived whole');
  assert.deepEqual(up.received, [16 * MiB, 16 * MiB, 16 * MiB, 16 * MiB], 'every request body arrived whole');
  const r = await gw.report();
  // One direction alone would make half; the h2c requests alone a quarter.
  const worth = (128 * MiB) / CHURN_BYTES;
  assert.ok(r.collections >= worth - 2 && r.collections <= worth, `scavenges: ${r.collections} of ${worth}`);
  // What the counted scavenges leave: the buffers in flight and the last few MiB's garbage, not V8's
  // 64 MiB of outside memory before it forces a full collection.
  assert.ok(r.peakArrayBuffers < 40 * MiB, `peak array buffers ${r.peakArrayBuffers}`);
});

test('without gc exposed the bodies pass through the same and nothing is collected', async (t) => {
  const up = await startUpstream(4 * MiB);
  t.after(() => up.close());
  const gw = await startChild([], up.port);
  t.after(() => gw.child.kill());
  assert.equal(await post1(gw.port, 12 * MiB), 4 * MiB);
  assert.equal(await post2(gw.port, 12 * MiB), 4 * MiB);
  assert.deepEqual(up.received, [12 * MiB, 12 * MiB]);
  assert.equal((await gw.report()).collections, 0);
});
