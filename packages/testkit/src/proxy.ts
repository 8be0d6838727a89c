// `@gw/testkit/proxy`: a DataPlane run in the test's own thread from YAML text, on real sockets (port 0).
// The one testkit module that imports the proxy (a dev dependency): import it only where @gw/proxy is.
import { Writable } from 'node:stream';
import type { TraceEvent } from '@gw/api';
import { loadConfigText } from '@gw/proxy/config/load';
import { LogHub } from '@gw/proxy/observability/logger';
import { ProxyMetrics } from '@gw/proxy/observability/metrics';
import { DataPlane } from '@gw/proxy/server/data-plane';

export interface TestProxy {
  plane: DataPlane;
  /** Port of the n-th bind (in config order). */
  port(n?: number): number;
  url(path?: string, n?: number): string;
  /** Applies a new config; rejects (and keeps the old one) when it is invalid. */
  reload(yaml: string): Promise<void>;
  /** Access log lines written so far, parsed. */
  accessLog: Record<string, unknown>[];
  metrics: ProxyMetrics;
  /** Arms a trace; the promise resolves with every event of the next (matching) request. */
  trace(expression?: string): Promise<TraceEvent[]>;
  close(): Promise<void>;
}

export async function startProxy(yaml: string, baseDir = process.cwd()): Promise<TestProxy> {
  const accessLog: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) accessLog.push(JSON.parse(line));
      cb();
    },
  });
  const logs = new LogHub(process.env.GW_TEST_LOG ?? 'info,proxy=error', 'json', sink as never);
  const metrics = new ProxyMetrics();
  const traces = new Map<number, { events: TraceEvent[]; done: (e: TraceEvent[]) => void }>();
  let nextTrace = 1;
  const plane = new DataPlane({
    log: logs.module('proxy'),
    accessLog: logs.module('request'),
    metrics,
    traceSink: (id, event) => {
      const t = traces.get(id);
      if (!t) return;
      if (event) t.events.push(event);
      else {
        traces.delete(id);
        t.done(t.events);
      }
    },
  });
  let ports: Record<string, number> = {};
  let keys: string[] = [];
  const apply = async (text: string) => {
    const { ir } = loadConfigText('test.yaml', text, baseDir);
    ports = await plane.apply(ir, ports);
    keys = ir.binds.map((b) => b.key);
  };
  await apply(yaml);
  const port = (n = 0) => ports[keys[n] as string] as number;
  return {
    plane,
    port,
    url: (path = '/', n = 0) => `http://127.0.0.1:${port(n)}${path}`,
    reload: apply,
    trace: (expression?: string) => {
      const id = nextTrace++;
      const p = new Promise<TraceEvent[]>((done) => traces.set(id, { events: [], done }));
      plane.armTrace(id, new SharedArrayBuffer(4), expression);
      return p;
    },
    accessLog,
    metrics,
    close: async () => {
      await plane.drain(200);
    },
  };
}
