// A Gateway's Programmed condition follows its proxies' answers: the translator says whether there is
// a configuration to send; this says whether the proxies took it. Pure: the proxies' states and the
// condition written before are passed in.
//
// - translator says False (no valid listener): kept.
// - a connected proxy rejected the configuration (NACK): False, ConfigRejected, the proxy's error.
// - every connected proxy acknowledged the version served now: True, Programmed.
// - no proxy connected: True (as before proxies were tracked, so a Gateway can be waited on before its
//   proxies start), reason Pending, and the message says no proxy is connected.
// - a proxy has not answered yet: the verdict written before (Programmed or ConfigRejected) stays, as
//   answers take milliseconds and a flip to Pending and back on every change would be two writes for
//   nothing; without one, True with reason Pending, saying how many proxies are awaited.
// - the controller provisions the proxies (deployer/) and their Deployment (or DaemonSet) has no
//   available replica: False, reason Pending, saying how many are available; none can serve until one is.
import { SENT_TO_PROXIES } from '../translator/gateways.ts';
import type { Condition, StatusUpdate } from '../translator/types.ts';
import type { ProxyAckState } from '../xds/server.ts';

/** Replicas of the Deployment the deployer made for a Gateway. */
export interface DeploymentReplicas {
  desired: number;
  available: number;
}

export function programmedCondition(
  translated: Condition,
  proxies: readonly ProxyAckState[],
  previous?: Condition,
  deployment?: DeploymentReplicas,
): Condition {
  if (translated.status !== 'True') return translated;
  const gen =
    translated.observedGeneration === undefined ? {} : { observedGeneration: translated.observedGeneration };
  if (deployment && deployment.available === 0 && deployment.desired > 0) {
    return {
      type: 'Programmed',
      status: 'False',
      reason: 'Pending',
      message: `the proxy workload has 0 of ${deployment.desired} replicas available`,
      ...gen,
    };
  }
  // what the translator left out ("without listeners a, b") still holds
  const rest = translated.message.startsWith(SENT_TO_PROXIES)
    ? translated.message.slice(SENT_TO_PROXIES.length)
    : '';
  const nacked = proxies.filter((p) => p.state === 'nacked');
  if (nacked.length > 0) {
    const message = nacked
      .map((p) => `proxy ${p.node} rejected the configuration: ${p.message ?? ''}`)
      .join('; ');
    return {
      type: 'Programmed',
      status: 'False',
      reason: 'ConfigRejected',
      message: message.slice(0, 32768),
      ...gen,
    };
  }
  if (proxies.length === 0) {
    return {
      type: 'Programmed',
      status: 'True',
      reason: 'Pending',
      message: `no proxy of this Gateway is connected; the configuration is ready for it${rest}`,
      ...gen,
    };
  }
  const waiting = proxies.filter((p) => p.state !== 'acked').length;
  if (waiting === 0) {
    const n = proxies.length;
    return {
      type: 'Programmed',
      status: 'True',
      reason: 'Programmed',
      message: `acknowledged by ${n === 1 ? 'the connected proxy' : `all ${n} connected proxies`}${rest}`,
      ...gen,
    };
  }
  if (previous && (previous.reason === 'Programmed' || previous.reason === 'ConfigRejected')) {
    const { lastTransitionTime: _t, ...kept } = previous as Condition & { lastTransitionTime?: string };
    return kept;
  }
  return {
    type: 'Programmed',
    status: 'True',
    reason: 'Pending',
    message: `waiting for ${waiting} of ${proxies.length} connected proxies to acknowledge the configuration${rest}`,
    ...gen,
  };
}

/**
 * The translator's statuses with each Gateway's Programmed condition following its proxies.
 * `proxies` gives a Gateway's proxies by `<namespace>/<name>`; `previous` its Programmed condition now.
 */
export function withProxyStates(
  statuses: readonly StatusUpdate[],
  proxies: (gateway: string) => readonly ProxyAckState[],
  previous: (namespace: string, name: string) => Condition | undefined,
  deployment: (namespace: string, name: string) => DeploymentReplicas | undefined = () => undefined,
): StatusUpdate[] {
  return statuses.map((s) => {
    if (s.kind !== 'Gateway') return s;
    const conditions = (s.status['conditions'] ?? []) as Condition[];
    const ns = s.namespace ?? 'default';
    return {
      ...s,
      status: {
        ...s.status,
        conditions: conditions.map((c) =>
          c.type === 'Programmed'
            ? programmedCondition(c, proxies(`${ns}/${s.name}`), previous(ns, s.name), deployment(ns, s.name))
            : c,
        ),
      },
    };
  });
}
