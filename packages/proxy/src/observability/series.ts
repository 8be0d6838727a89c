// Counters and histograms for the per-request metrics, registered in a prom-client Registry. A
// prom-client child bound by labels() still hashes and validates its labels on every inc/observe
// (about 3 µs a proxied request for gw_requests_total plus gw_request_duration_seconds); here a
// series is a plain object found once per label set and then bumped in place, and prom-client
// reads the series in its own export shape when it is scraped (Registry.getMetricsAsJSON, and the
// main thread's AggregatorRegistry sums the workers' answers as it does for its own metrics).
import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

interface Value {
  labels: Labels;
  value: number;
  metricName?: string;
}

abstract class Family<S extends { labels: Labels }> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum';
  abstract readonly type: 'counter' | 'histogram';
  readonly #labelNames: readonly string[];
  readonly #series = new Map<string, S>();

  constructor(o: { name: string; help: string; labelNames: readonly string[]; registry: Registry }) {
    this.name = o.name;
    this.help = o.help;
    this.#labelNames = o.labelNames;
    o.registry.registerMetric(this as never);
  }

  /** The series of these label values (in labelNames order); callers keep it rather than ask again. */
  series(...values: string[]): S {
    const key = values.join('\u0000');
    let s = this.#series.get(key);
    if (!s) {
      const labels: Labels = {};
      this.#labelNames.forEach((n, i) => {
        labels[n] = values[i] ?? '';
      });
      s = this.create(labels);
      this.#series.set(key, s);
    }
    return s;
  }

  protected abstract create(labels: Labels): S;
  protected abstract values(s: S): Value[];

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const values: Value[] = [];
    for (const s of this.#series.values()) values.push(...this.values(s));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.#series.clear();
  }
}

export interface CounterSeries {
  readonly labels: Labels;
  value: number;
}

export class CounterFamily extends Family<CounterSeries> {
  readonly type = 'counter';

  protected create(labels: Labels): CounterSeries {
    return { labels, value: 0 };
  }

  protected values(s: CounterSeries): Value[] {
    return [{ labels: s.labels, value: s.value }];
  }
}

export class HistogramSeries {
  readonly labels: Labels;
  readonly #bounds: readonly number[];
  /** Observations per bucket (not cumulative); the last slot is above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    const b = this.#bounds;
    let i = 0;
    while (i < b.length && v > (b[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += v;
    this.count++;
  }
}

export class HistogramFamily extends Family<HistogramSeries> {
  readonly type = 'histogram';
  readonly #bounds: readonly number[];

  constructor(o: {
    name: string;
    help: string;
    labelNames: readonly string[];
    buckets: readonly number[];
    registry: Registry;
  }) {
    super(o);
    this.#bounds = [...o.buckets].sort((a, b) => a - b);
  }

  protected create(labels: Labels): HistogramSeries {
    return new HistogramSeries(labels, this.#bounds);
  }

  protected values(s: HistogramSeries): Value[] {
    const bucket = `${this.name}_bucket`;
    const out: Value[] = [];
    let acc = 0;
    this.#bounds.forEach((le, i) => {
      acc += s.counts[i] as number;
      out.push({ labels: { ...s.labels, le: String(le) }, value: acc, metricName: bucket });
    });
    out.push(
      { labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: bucket },
      { labels: s.labels, value: s.sum, metricName: `${this.name}_sum` },
      { labels: s.labels, value: s.count, metricName: `${this.name}_count` },
    );
    return out;
  }
}

/** A family read from live state when scraped (endpoint health) rather than bumped per request. */
export class CollectedFamily {
  readonly name: string;
  readonly help: string;
  readonly type: 'gauge' | 'counter';
  readonly aggregator = 'sum';
  readonly #collect: () => { labels: Labels; value: number }[];

  constructor(o: {
    name: string;
    help: string;
    type: 'gauge' | 'counter';
    registry: Registry;
    collect: () => { labels: Labels; value: number }[];
  }) {
    this.name = o.name;
    this.help = o.help;
    this.type = o.type;
    this.#collect = o.collect;
    o.registry.registerMetric(this as never);
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: this.#collect(),
    };
  }

  reset(): void {}
}
