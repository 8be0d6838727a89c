// Runs the endpoint picker of the tests on its own, for trying examples/inference-routing.yaml by
// hand: it takes turns between the endpoints it is given and prints each choice.
//   node packages/testkit/src/serve-endpoint-picker.ts --port 9002 --endpoints 127.0.0.1:8089,127.0.0.1:8090
import { parseArgs } from 'node:util';
import { startEndpointPicker } from './endpoint-picker.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '9002' },
    endpoints: { type: 'string', default: '127.0.0.1:8089,127.0.0.1:8090' },
  },
});
const endpoints = values.endpoints.split(',').map((e) => e.trim());
let turn = 0;
const picker = await startEndpointPicker((r) => {
  const chosen = endpoints[turn++ % endpoints.length];
  console.log(`model ${JSON.stringify(r.json?.model ?? null)} -> ${chosen}`);
  return chosen;
}, Number(values.port));
console.log(`endpoint picker (ext_proc) on ${picker.host}, taking turns between ${endpoints.join(', ')}`);
const stop = () => {
  picker.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
