// Checks of frontend policies (the standalone FrontendPolicies shape): the network authorization rules
// and the access log's filter and added fields are CEL; trusted proxies are IP addresses or CIDRs.
import type { AccessLog, Authorization } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import { checkCel, checkCelMap } from './cel.ts';
import { isCidr } from './cidr.ts';
import type { Problem } from './problem.ts';
import { checkAuthorization } from './traffic.ts';

interface Frontend {
  networkAuthorization?: Authorization | undefined;
  accessLog?: AccessLog | undefined;
  logging?: AccessLog | undefined;
  http?: { trustedProxies?: string[] | undefined } | undefined;
  proxyProtocol?: object | undefined;
  proxy?: object | undefined;
}

export function checkFrontendPolicies(f: Frontend, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (f.networkAuthorization)
    out.push(...checkAuthorization(f.networkAuthorization, [...path, 'networkAuthorization']));
  if (f.accessLog) out.push(...checkAccessLog(f.accessLog, [...path, 'accessLog']));
  if (f.logging) out.push(...checkAccessLog(f.logging, [...path, 'logging']));
  if (f.proxy && f.proxyProtocol)
    out.push({
      path: [...path, 'proxy'],
      message: 'set proxyProtocol or proxy (another name of it), not both',
    });
  f.http?.trustedProxies?.forEach((c, i) => {
    if (!isCidr(c))
      out.push({
        path: [...path, 'http', 'trustedProxies', i],
        message: `expected an IP address or CIDR such as 10.0.0.0/8 or fd00::/8, got ${JSON.stringify(c)}`,
      });
  });
  return out;
}

export function checkAccessLog(
  al: { filter?: string | undefined; add?: Record<string, string> | undefined },
  path: FieldPath,
): Problem[] {
  return [
    ...(al.filter === undefined ? [] : checkCel(al.filter, [...path, 'filter'])),
    ...checkCelMap(al.add, [...path, 'add']),
  ];
}
