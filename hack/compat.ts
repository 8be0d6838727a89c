// Measures how much of agentgateway's config and CRDs gw accepts (issue 16): compares gw's generated
// schema/config.json and crds/gw.dev_*.yaml with agentgateway's published ones, read from
// ../shared/reference/agentgateway/ beside the checkout (skipped when that folder is not there).
//   node hack/compat.ts                  config: per field path same / not supported / missing / different
//   node hack/compat.ts --crds           CRDs: per kind and path under spec, same / missing / different type|limits
//                                        (and spec-mandated: differences the spec requires, SPEC_MANDATED below)
//   --summary                            counts per verdict and the one line for the issue's note
//   --json                               machine-readable findings
//   --only missing,different             list only these verdicts (and no gw-only fields)
//   --paths                              list every path a difference occurs at, not only its count
//   --descriptions                       with --crds, list the fields whose descriptions differ too
//   --fail-on-different                  exit 1 when anything is "different" (a CI gate)
//   --reference DIR                      compare with another copy of the reference
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type Comparison,
  compareSchemas,
  countVerdicts,
  type Finding,
  hasDifferences,
  type Json,
  splitPath,
  summaryLine,
  type Verdict,
} from './compat-compare.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_REFERENCE = resolve(root, '../shared/reference/agentgateway');

// the yaml package is a dependency of @gw/api, not of the workspace root this script runs from
const { parse: parseYaml } = createRequire(join(root, 'packages/api/package.json'))('yaml') as {
  parse(src: string): unknown;
};

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Json;

export function compareConfig(referenceDir: string): Comparison {
  return compareSchemas(
    readJson(join(referenceDir, 'config.schema.json')),
    readJson(join(root, 'schema/config.json')),
    {
      mode: 'config',
    },
  );
}

/** A CRD file's kind and the openAPIV3Schema of its storage version. */
function crdSchema(path: string): { kind: string; schema: Json } {
  const crd = parseYaml(readFileSync(path, 'utf8')) as {
    spec: { names: { kind: string }; versions: { storage?: boolean; schema?: { openAPIV3Schema?: Json } }[] };
  };
  const version = crd.spec.versions.find((v) => v.storage) ?? crd.spec.versions[0];
  const schema = version?.schema?.openAPIV3Schema;
  if (!schema) throw new Error(`${path}: no openAPIV3Schema`);
  return { kind: crd.spec.names.kind, schema };
}

export interface KindComparison extends Comparison {
  reference: string;
  gw: string;
}

/**
 * Differences gw's spec mandates (../shared/spec/gateway-spec.md), each with its reason: a CRD
 * finding at a path ending in `tail` whose verdict is `verdict` is reported as "spec-mandated",
 * apart from the differences still to remove.
 */
export const SPEC_MANDATED: readonly { tail: string; verdict: Verdict; reason: string }[] = [
  ...(['request', 'response'] as const).map((side) => ({
    tail: `promptGuard.${side}[].regex.matches`,
    verdict: 'different type' as const,
    reason:
      "the spec's regex guard has matches[] {pattern, name}: objects, where agentgateway lists bare pattern strings, and a structural CRD schema cannot take both forms in one list",
  })),
];

/** `findings` with those the allow-list names turned spec-mandated, its reason first. */
export function applySpecMandated(
  findings: readonly Finding[],
  list: readonly { tail: string; verdict: Verdict; reason: string }[] = SPEC_MANDATED,
): Finding[] {
  return findings.map((f) => {
    const m = list.find(
      (e) => f.verdict === e.verdict && (f.path === e.tail || f.path.endsWith(`.${e.tail}`)),
    );
    return m ? { ...f, verdict: 'spec-mandated', reasons: [`spec: ${m.reason}`, ...f.reasons] } : f;
  });
}

/** Each reference CRD beside gw's (agentgatewaypolicies.yaml ↔ gw.dev_gwpolicies.yaml), under spec. */
export function compareCrds(referenceDir: string): KindComparison[] {
  const dir = join(referenceDir, 'crds');
  const files = [
    'agentgatewaypolicies',
    'agentgatewaybackends',
    'agentgatewaymodels',
    'agentgatewayparameters',
  ];
  return files
    .filter((f) => existsSync(join(dir, `${f}.yaml`)))
    .map((f) => {
      const ref = crdSchema(join(dir, `${f}.yaml`));
      const gwPath = join(root, 'crds', `gw.dev_${f.replace(/^agentgateway/, 'gw')}.yaml`);
      if (!existsSync(gwPath)) {
        return { reference: ref.kind, gw: '(none)', mode: 'crd', findings: [], gwOnly: [], descriptions: [] };
      }
      const gw = crdSchema(gwPath);
      const spec = (s: Json) => (s['properties'] as Record<string, Json> | undefined)?.['spec'] ?? {};
      const c = compareSchemas(spec(ref.schema), spec(gw.schema), { mode: 'crd', path: 'spec' });
      return { reference: ref.kind, gw: gw.kind, ...c, findings: applySpecMandated(c.findings) };
    });
}

/** All kinds' findings as one comparison (paths prefixed with the gw kind), for the summary line. */
export function mergeKinds(kinds: KindComparison[]): Comparison {
  const prefix = <T extends { path: string }>(k: KindComparison, xs: T[]) =>
    xs.map((x) => ({ ...x, path: `${k.gw}:${x.path}` }));
  return {
    mode: 'crd',
    findings: kinds.flatMap((k) => prefix(k, k.findings)),
    gwOnly: kinds.flatMap((k) => prefix(k, k.gwOnly)),
    descriptions: kinds.flatMap((k) => prefix(k, k.descriptions)),
  };
}

const describe = (f: Finding) =>
  `${f.below ? ` (+${f.below} below)` : ''}${f.reasons.length > 0 ? `: ${f.reasons.join('; ')}` : ''}`;

/**
 * Findings grouped by verdict (the worst first, "same" last), then by area; within an area, one line
 * per tail and finding, with the number of places it occurs (each listed with `paths`).
 */
export function formatFindings(
  c: Comparison,
  opts: { only?: ReadonlySet<Verdict>; paths?: boolean } = {},
): string[] {
  const lines: string[] = [];
  const verdicts = [...countVerdicts(c).keys()].reverse();
  for (const v of verdicts) {
    if (opts.only && !opts.only.has(v)) continue;
    const fs = c.findings.filter((f) => f.verdict === v);
    if (fs.length === 0) continue;
    lines.push(`${v} (${fs.length} paths)`);
    const byArea = new Map<string, Map<string, Finding[]>>();
    for (const f of fs) {
      const { area, tail } = splitPath(f.path.replace(/^\w+:/, ''));
      const tails = byArea.get(area) ?? new Map<string, Finding[]>();
      byArea.set(area, tails);
      const key = `${tail}${describe(f)}`;
      tails.set(key, [...(tails.get(key) ?? []), f]);
    }
    const size = (m: Map<string, Finding[]>) => [...m.values()].reduce((n, x) => n + x.length, 0);
    for (const [area, tails] of [...byArea].sort(
      (a, b) => size(b[1]) - size(a[1]) || (a[0] < b[0] ? -1 : 1),
    )) {
      lines.push(`  ${area} (${size(tails)})`);
      for (const [key, group] of tails) {
        lines.push(`    ${key}${group.length > 1 ? ` [${group.length} places]` : ''}`);
        if (opts.paths && group.length > 1) for (const f of group) lines.push(`      ${f.path}`);
      }
    }
  }
  if (!opts.only && c.gwOnly.length > 0) {
    lines.push(`gw only (${c.gwOnly.length} paths)`);
    for (const o of c.gwOnly) lines.push(`    ${o.path}`);
  }
  return lines;
}

function countsBlock(c: Comparison): string[] {
  const lines = [...countVerdicts(c)].map(([v, n]) => `  ${v}: ${n}`);
  lines.push(`  gw only: ${c.gwOnly.length}`);
  if (c.mode === 'crd') lines.push(`  descriptions differ (not failing): ${c.descriptions.length}`);
  return lines;
}

export function main(argv: readonly string[]): number {
  const flag = (name: string) => argv.includes(name);
  const option = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const referenceDir = resolve(option('--reference') ?? DEFAULT_REFERENCE);
  const only = option('--only');
  const onlySet = only ? new Set(only.split(',').map((s) => s.trim() as Verdict)) : undefined;
  const crds = flag('--crds');
  if (!existsSync(referenceDir)) {
    console.log(`compat: ${referenceDir} does not exist; agentgateway comparison skipped`);
    return 0;
  }
  let different: boolean;
  if (!crds) {
    const c = compareConfig(referenceDir);
    different = hasDifferences(c);
    if (flag('--json')) console.log(JSON.stringify({ summary: summaryLine('config', c), ...c }, null, 2));
    else if (flag('--summary'))
      console.log(['config', ...countsBlock(c), summaryLine('config', c)].join('\n'));
    else
      console.log(
        [
          ...formatFindings(c, { ...(onlySet ? { only: onlySet } : {}), paths: flag('--paths') }),
          '',
          summaryLine('config', c),
        ].join('\n'),
      );
  } else {
    const kinds = compareCrds(referenceDir);
    const all = mergeKinds(kinds);
    different = hasDifferences(all);
    if (flag('--json')) {
      console.log(JSON.stringify({ summary: summaryLine('crds', all), kinds }, null, 2));
    } else {
      const lines: string[] = [];
      for (const k of kinds) {
        lines.push(`== ${k.reference} ↔ ${k.gw}`);
        if (flag('--summary')) lines.push(...countsBlock(k), `  ${summaryLine(k.gw, k)}`);
        else {
          lines.push(...formatFindings(k, { ...(onlySet ? { only: onlySet } : {}), paths: flag('--paths') }));
          if (flag('--descriptions')) {
            lines.push(`descriptions differ (${k.descriptions.length})`);
            for (const d of k.descriptions) lines.push(`    ${d.path}`);
          }
          lines.push('');
        }
      }
      lines.push(summaryLine('crds', all));
      console.log(lines.join('\n'));
    }
  }
  return flag('--fail-on-different') && different ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
