// Checks of frontend policies (the standalone FrontendPolicies shape): the network authorization rules
// and the access log's filter and added fields are CEL.
import type { AccessLog, Authorization } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import { checkCel, checkCelMap } from './cel.ts';
import type { Problem } from './problem.ts';
import { checkAuthorization } from './traffic.ts';

interface Frontend {
  networkAuthorization?: Authorization | undefined;
  accessLog?: AccessLog | undefined;
}

export function checkFrontendPolicies(f: Frontend, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (f.networkAuthorization)
    out.push(...checkAuthorization(f.networkAuthorization, [...path, 'networkAuthorization']));
  if (f.accessLog) out.push(...checkAccessLog(f.accessLog, [...path, 'accessLog']));
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
