// The words of a status message for what @gw/api's checks found: `<CRD field path>: <problem>`.
import type { Problem } from '@gw/api';
import { formatPath } from '@gw/api/crd/validate';

export function describeProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `${formatPath('', p.path)}: ${p.message}`).join('; ');
}
