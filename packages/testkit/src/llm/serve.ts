// Runs the fake OpenAI-compatible provider on its own, for trying examples/llm.yaml by hand:
//   node packages/testkit/src/llm/serve.ts --port 8089 [--api-key sk-fake] [--chunk-delay 50] [--name a]
// (`--name` is sent back in x-fake-provider, to tell several apart)
import { parseArgs } from 'node:util';
import { startFakeOpenAI } from './openai.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8089' },
    'api-key': { type: 'string' },
    'chunk-delay': { type: 'string', default: '0' },
    name: { type: 'string', default: 'fake-openai' },
  },
});
const fake = await startFakeOpenAI({
  name: values.name,
  port: Number(values.port),
  chunkDelayMs: Number(values['chunk-delay']),
  ...(values['api-key'] ? { apiKey: values['api-key'] } : {}),
});
console.log(
  `fake OpenAI provider on ${fake.origin} (POST …/chat/completions, …/responses, …/embeddings; GET …/models)`,
);
const stop = () => {
  fake.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
