// The tests' A2A agent (test-support.ts) as a process, for trying examples/a2a.yaml by hand:
//   node packages/proxy/src/a2a/serve-agent.ts [--port 9999]
// "stream" tasks finish after a second instead of waiting for a test.
import { parseArgs } from 'node:util';
import { startAgent } from './test-support.ts';

const { values } = parseArgs({ options: { port: { type: 'string', default: '9999' } } });
const agent = await startAgent({ port: Number(values.port), streamDelayMs: 1000 });
console.log(`A2A agent on ${agent.origin} (card: ${agent.origin}/.well-known/agent-card.json)`);
const stop = () => void agent.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
