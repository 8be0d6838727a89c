// Regenerates every generated file from its source; with --check, fails when a committed file is stale.
// Today: schema/config.json (the standalone config's JSON Schema) and crds/*.yaml (the gw.dev CRDs) from
// packages/api, the same CRDs as templates of charts/gw-crds, the Parameters tables of the charts'
// READMEs from their values.yaml (@bitnami/readme-generator-for-helm through npx), and the protobuf-es
// code in packages/xds-proto/src/gen from the Envoy .proto files inside @grpc/grpc-js-xds (buf.gen.yaml).
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configJsonSchema } from '@gw/api/config/json-schema';
import { crdFileName, crdYaml, KINDS } from '@gw/api/crd/crds';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');

const outputs: { path: string; content: string }[] = [
  { path: join(root, 'schema/config.json'), content: `${JSON.stringify(configJsonSchema(), null, 2)}\n` },
];

// Generated directories are compared whole: a file the generator no longer writes is stale too.
const generatedDirs: string[] = [join(root, 'crds')];

for (const k of KINDS) {
  outputs.push({
    path: join(root, 'crds', crdFileName(k)),
    content: crdYaml(k),
  });
}

// The chart's CRD templates are the crds/ files with the release's labels (and the keep annotation).
const chartCrds = join(root, 'charts/gw-crds/templates/crds');
generatedDirs.push(chartCrds);
const CRD_LABELS = '  labels:\n    app.kubernetes.io/part-of: gw\n';
for (const k of KINDS) {
  const yaml = crdYaml(k);
  if (yaml.includes('{{') || !yaml.includes(CRD_LABELS))
    throw new Error(`${crdFileName(k)}: cannot template it (has {{ or lacks the part-of label)`);
  const body = yaml
    .replace(/^# Install with: .*\n/m, '# Installed by the gw-crds chart (charts/gw-crds).\n')
    .replace(
      CRD_LABELS,
      '  labels:\n    {{- include "gw-crds.labels" . | nindent 4 }}\n' +
        '  {{- if .Values.keep }}\n  annotations:\n    helm.sh/resource-policy: keep\n  {{- end }}\n',
    );
  outputs.push({ path: join(chartCrds, crdFileName(k)), content: body });
}

/**
 * The Parameters section of a chart's README, from the `## @param` comments of its values.yaml, by
 * @bitnami/readme-generator-for-helm (run through npx, pinned). It edits the README in place, so it
 * runs on a copy; the rest of the README is written by hand.
 */
const README_GENERATOR = '@bitnami/readme-generator-for-helm@2.7.2';
function chartReadme(chart: string): void {
  const dir = join(root, 'charts', chart);
  const tmp = mkdtempSync(join(tmpdir(), 'gw-gen-readme-'));
  try {
    const readme = join(dir, 'README.md');
    if (existsSync(readme)) copyFileSync(readme, join(tmp, 'README.md'));
    else writeFileSync(join(tmp, 'README.md'), `# ${chart}\n\n## Parameters\n`);
    const r = spawnSync(
      'npx',
      ['--yes', README_GENERATOR, '--values', join(dir, 'values.yaml'), '--readme', join(tmp, 'README.md')],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    if (r.status !== 0)
      throw new Error(`${README_GENERATOR} failed on charts/${chart}/values.yaml:\n${r.stdout}${r.stderr}`);
    outputs.push({ path: readme, content: readFileSync(join(tmp, 'README.md'), 'utf8') });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
for (const chart of ['gw', 'gw-crds']) chartReadme(chart);

function filesUnder(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => relative(dir, join(e.parentPath, e.name)))
      .sort();
  } catch {
    return [];
  }
}

/** buf (the npm package's binary) runs protoc-gen-es into a temporary directory. */
function protobufEs(): void {
  const pkg = join(root, 'packages/xds-proto');
  const bin = join(pkg, 'node_modules/.bin');
  const tmp = mkdtempSync(join(tmpdir(), 'gw-gen-'));
  try {
    execFileSync(join(bin, 'buf'), ['generate', '--template', 'buf.gen.yaml', '--output', tmp], {
      cwd: pkg,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` },
    });
    const out = join(pkg, 'src/gen');
    generatedDirs.push(out);
    for (const f of filesUnder(join(tmp, 'src/gen'))) {
      outputs.push({ path: join(out, f), content: readFileSync(join(tmp, 'src/gen', f), 'utf8') });
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
protobufEs();

let stale = 0;
for (const o of outputs) {
  let current: string | undefined;
  try {
    current = readFileSync(o.path, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === o.content) continue;
  if (check) {
    stale++;
    console.error(`stale generated file: ${relative(root, o.path)} (run make gen and commit the result)`);
  } else {
    mkdirSync(dirname(o.path), { recursive: true });
    writeFileSync(o.path, o.content);
    console.log(`wrote ${relative(root, o.path)}`);
  }
}
const expected = new Set(outputs.map((o) => o.path));
for (const dir of generatedDirs) {
  for (const f of filesUnder(dir)) {
    const path = join(dir, f);
    if (expected.has(path)) continue;
    if (check) {
      stale++;
      console.error(`generated file no longer produced: ${relative(root, path)} (run make gen)`);
    } else {
      unlinkSync(path);
      console.log(`removed ${relative(root, path)}`);
    }
  }
}
if (stale > 0) process.exit(1);
if (check) console.log(`generated files are fresh (${outputs.length} checked)`);
