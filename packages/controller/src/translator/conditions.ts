// Building status conditions from @gw/api's catalogue (status/reasons.ts): a reason the catalogue does
// not list for a condition type does not compile.
import type { ConditionType, Reason } from '@gw/api/status/reasons';
import type { Condition } from './types.ts';

function build<T extends ConditionType>(
  status: 'True' | 'False',
  type: T,
  reason: Reason<T>,
  message: string,
  generation?: number,
): Condition {
  return {
    type,
    status,
    reason,
    message,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
  };
}

/** A condition with status True. */
export const ok = <T extends ConditionType>(
  type: T,
  reason: Reason<T>,
  message: string,
  generation?: number,
) => build('True', type, reason, message, generation);

/** A condition with status False. */
export const bad = <T extends ConditionType>(
  type: T,
  reason: Reason<T>,
  message: string,
  generation?: number,
) => build('False', type, reason, message, generation);
