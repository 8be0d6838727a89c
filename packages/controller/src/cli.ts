// `gw-controller`: the Kubernetes control plane. Not built yet; this entry point says so plainly
// instead of pretending to run.
import { parseArgs } from 'node:util';

const VERSION = '0.1.0';
const USAGE = `Usage: gw-controller [--version] [--help]

The control plane (Gateway API + gw.dev CRDs -> xDS) is not implemented in this build.
Run the proxy standalone instead: bin/gw -f config.yaml
`;

const { values } = parseArgs({
  options: { version: { type: 'boolean', short: 'V' }, help: { type: 'boolean', short: 'h' } },
  strict: false,
});
if (values.version) {
  process.stdout.write(`gw-controller ${VERSION} (node ${process.versions.node})\n`);
} else if (values.help) {
  process.stdout.write(USAGE);
} else {
  process.stderr.write(`gw-controller: ${USAGE}`);
  process.exitCode = 1;
}
