// The words of a status message for what @gw/api's checks found: `<CRD field path>: <problem>`, on
// one line (a CEL code frame becomes its line and column).
import { inOneLine, type Problem } from '@gw/api';
import { formatPath } from '@gw/api/crd/validate';

export function describeProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `${formatPath('', p.path)}: ${inOneLine(p.message)}`).join('; ');
}
