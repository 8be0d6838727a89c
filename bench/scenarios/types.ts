// The contract every benchmark scenario implements, and the shapes of what it is given and returns,
// so a new scenario is one file in this folder plus a line in scenarios/index.ts.

export type ModeName = 'pinned' | 'unpinned';

/** How the machine is split between the proxy under test and everything else. */
export interface Mode {
  name: ModeName;
  label: string;
  /** gw workerThreads and nginx worker_processes. */
  workers: number;
  /** taskset CPU list for the proxies; undefined means unpinned. */
  proxyCpus: string | undefined;
  /** taskset CPU list for the upstream, the load generators and the harness itself. */
  loadCpus: string | undefined;
  /** wrk threads. */
  loadThreads: number;
}

export interface Ports {
  gw: number;
  nginx: number;
  upstream: number;
  admin: number;
  stats: number;
  ready: number;
}

export interface ConfigureInput {
  mode: Mode;
  ports: Ports;
}

export type UpstreamSpec =
  /** An nginx instance; `http` is the body of its http {} block (servers listening on ports.upstream). */
  | { kind: 'nginx'; http: string; workers: number }
  /** Any program listening on ports.upstream; readiness is a 2xx answer on readyPath. */
  | { kind: 'command'; argv: string[]; readyPath: string };

export interface LoadSpec {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: string | undefined;
  /** Connections of the closed-loop saturation run (wrk). */
  connections: number;
  /** Total requests per second of the fixed-rate latency run (h2load --rps). */
  rateRps: number;
  /** Connections the fixed rate is spread over; must divide rateRps. */
  latencyConnections: number;
}

/** Everything needed to start the peers of one mode; pure, so it can be inspected without running. */
export interface ScenarioConfig {
  upstream: UpstreamSpec;
  /** The gw config file (agentgateway-compatible YAML) listening on ports.gw. */
  gwYaml: string;
  /** Body of the http {} block of the nginx proxy peer, listening on ports.nginx. */
  nginxHttp: string;
  load: LoadSpec;
}

export interface Settings {
  quick: boolean;
  /** Interleaved rounds; each round measures every peer once. */
  pairs: number;
  saturationSeconds: number;
  latencySeconds: number;
  warmupSeconds: number;
  modes: Mode[];
  /** Stand in a second nginx for gw, to test the harness before bin/gw exists. */
  standin: boolean;
}

export interface RunContext {
  settings: Settings;
  /** Scratch directory for configs and logs, removed after the run. */
  workDir: string;
  gwBin: string;
  log: (line: string) => void;
}

export type Unit = 'x' | 'us' | 'MiB' | 'rps' | '%' | 'count';

/** One reported number: the median over rounds and its min–max range. */
export interface Figure {
  key: string;
  label: string;
  unit: Unit;
  median: number;
  min: number;
  max: number;
  n: number;
}

export interface ModeResult {
  mode: Mode;
  figures: Figure[];
  /** Anything that makes the figures doubtful (errors, missed rates), shown with the table. */
  notes: string[];
  /** Raw measurements (per round, per peer), for re-analysis. */
  raw: unknown;
}

export interface ScenarioResult {
  modes: ModeResult[];
}

export interface Scenario {
  /** Kebab-case slug, used in result file names. */
  readonly name: string;
  /** Heading in RESULTS.md. */
  readonly title: string;
  /** Published figures of other implementations to quote next to ours. */
  readonly reference?: string;
  configure(input: ConfigureInput): ScenarioConfig;
  run(ctx: RunContext): Promise<ScenarioResult>;
}
