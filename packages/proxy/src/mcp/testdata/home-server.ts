// A stateful stdio MCP server (SDK) for the cross-worker tests: `whoami` answers its pid and how many
// calls it has counted, `ask` asks the client to sample, and `notify` says something on its own a
// moment after it answers (for the client's GET stream).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { type CreateMessageResult, CreateMessageResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const s = new McpServer({ name: 'home', version: '1.0.0' }, { capabilities: { logging: {} } });
let calls = 0;
s.registerTool('whoami', { description: 'The process id and the calls counted' }, async () => ({
  content: [{ type: 'text', text: `${process.pid} ${++calls}` }],
}));
s.registerTool('ask', { description: 'Asks the client to sample' }, async (extra) => {
  const r = (await extra.sendRequest(
    {
      method: 'sampling/createMessage',
      params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi?' } }], maxTokens: 10 },
    },
    CreateMessageResultSchema,
  )) as CreateMessageResult;
  return {
    content: [{ type: 'text', text: `client said: ${r.content.type === 'text' ? r.content.text : '?'}` }],
  };
});
s.registerTool(
  'notify',
  { description: 'Says `text` soon, outside the call', inputSchema: { text: z.string() } },
  async ({ text }) => {
    setTimeout(() => void s.server.sendLoggingMessage({ level: 'info', data: text }), 50);
    return { content: [{ type: 'text', text: 'ok' }] };
  },
);
await s.connect(new StdioServerTransport());
