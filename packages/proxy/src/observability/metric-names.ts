// The names of the request metrics each worker collects (metrics.ts), without prom-client: what
// config.metrics.remove may name. A test keeps the list equal to the registry's.
export const METRIC_NAMES = [
  'gw_requests_total',
  'gw_request_duration_seconds',
  'gw_upstream_duration_seconds',
  'gw_a2a_requests_total',
  'gw_llm_tokens_total',
  'gw_llm_cost_total',
  'gw_llm_guardrail_actions_total',
  'gw_mcp_requests_total',
  'gw_mcp_guardrail_actions_total',
  'gw_mirrored_requests_total',
  'gw_endpoint_healthy',
  'gw_endpoint_ejections_total',
  'gw_endpoint_health_checks_total',
  'gw_tcp_connections_total',
  'gw_tcp_bytes_total',
  'gw_downstream_connections_total',
  'gw_downstream_connections_open',
  'gw_worker_event_loop_busy_seconds_total',
  'gw_worker_heap_bytes',
  'gw_config_applied_total',
] as const;
