// What the proxy's data plane (its worker threads) needs from @gw/api at run time, without the zod
// schemas that validate a config: importing those costs each worker about 10 MiB, and a worker only
// ever receives a config the main thread has already validated and compiled. Nor the CEL library:
// the proxy loads @gw/api/cel/environment with the first expression it compiles (cel/cel.ts).

export { AWS_SESSION_NAME } from './aws-names.ts';
export { CEL_VARIABLES, caseless, celHeaderMap, celToJson, setCelField } from './cel/values.ts';
export { hashFormat, parseHtpasswd } from './checks/htpasswd.ts';
export { GUARD_REGEX_FLAGS, jsRegex, userRegExp } from './checks/regex.ts';
export { DEFAULT_SENSITIVE_HEADERS } from './config/credentials.ts';
export { parseByteSize, parseGoDuration } from './duration.ts';
export { EXTPROC_ATTRIBUTES_NAMESPACE, EXTPROC_GRPC_METADATA_NAMESPACE } from './ext-proc-names.ts';
export { HEADER_NAME_REGEXP as HEADER_NAME_PATTERN } from './header-name.ts';
export { bracketHost, hostPort, splitHostPort } from './host-port.ts';
export { listenAddressProblem } from './listen-address.ts';
export { ModelNameMatcher } from './llm/model-names.ts';
export { LOG_LEVELS } from './log-level.ts';
export { descopeAgentic, type EntraEndpoints, entraEndpoints } from './mcp-idp.ts';
export { caCertificatesProblem } from './pem.ts';
