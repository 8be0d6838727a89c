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
  /** A second upstream, for a scenario with two (mcp federates two targets); its own runner allocates it. */
  upstream2?: number;
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
  /**
   * Requests gw must answer with the given status (and carrying responseHeader, when set) before any
   * load, sent as the load's request with `headers` in place of load.headers: proof that the policies
   * under test really run, e.g. 401 without a token.
   */
  gwExpect?: { what: string; headers: Record<string, string>; status: number; responseHeader?: string }[];
  /**
   * Lines gw's Prometheus endpoint (statsAddr /metrics) must show once the peers have each answered one
   * load request, as regular expression sources (multiline): proof of work gw does on the side, e.g.
   * the LLM layer counting the answer's tokens.
   */
  gwMetricsExpect?: { what: string; pattern: string }[];
  /**
   * agentgateway's equivalent of gwYaml (its listener on ports.gw, admin, stats and readiness on
   * ports.admin, ports.stats and ports.ready), when it can do the same job; the agentgateway peer is left
   * out of the scenario when this is undefined. It must pass `agentgateway --validate-only`.
   */
  agentgatewayYaml?: string;
}

/** How the report names the peers, when they are not all plain proxies. */
export interface PeerLabels {
  gw: string;
  nginx: string;
  /** The second gw peer, measured when the scenario has a gwBaseline. */
  gwBaseline: string;
  /** gw with the scenario's config and the default logging (access log on), when gwAccessLog is set. */
  gwAccessLog: string;
  /** The minimal Node proxy (bench/peers/node-floor.ts). */
  nodeFloor: string;
  agentgateway: string;
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
  /** The agentgateway binary when it exists (../shared/bin/agentgateway); its peer is skipped otherwise. */
  agentgatewayBin: string | undefined;
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
  /**
   * A second gw peer ("gw-plain") measured in the same rounds, with the same upstream and load: its
   * gwYaml comes from this configure(), given ports of its own for gw, admin, stats and readiness.
   * It makes the cost of a feature (gw with it / gw without it) a within-round ratio.
   */
  readonly gwBaseline?: Pick<Scenario, 'configure'>;
  /**
   * Also measure gw with its default logging (the access log on, written to a file as a user's stdout
   * would be) next to the logs-off gw, with the same config otherwise: the access log's cost.
   */
  readonly gwAccessLog?: boolean;
  readonly peerLabels?: Partial<PeerLabels>;
  /**
   * Per-peer seconds and rounds for BENCH_QUICK=1 when the defaults would not fit the quick budget;
   * explicit BENCH_SECONDS / BENCH_LATENCY_SECONDS / BENCH_PAIRS still win. The result file records
   * what ran.
   */
  readonly quick?: Partial<Pick<Settings, 'saturationSeconds' | 'latencySeconds' | 'pairs'>>;
  /**
   * Whether BENCH_QUICK=1 waits the 5 s of quiet before reading idle RSS (proxy comparisons). Only the
   * scenario whose idle figures are targets does; the others skip the wait in quick runs and report
   * no idle RSS (full runs always measure it).
   */
  readonly quickIdleMemory?: boolean;
  /**
   * What one peer's measurement in one round is, for the report, when it is not the default (wrk
   * saturation, then h2load at load.rateRps).
   */
  describeLoad?(settings: Settings): string;
  run(ctx: RunContext): Promise<ScenarioResult>;
}
