// A stdio MCP server (SDK) for the supervisor's tests: `pid` tells which process answers, `crash`
// exits mid-call, and `CRASH_AT_START=1` makes every start fail. Logs a line to stderr at start.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

if (process.env.CRASH_AT_START === '1') {
  process.stderr.write('crashy: refusing to start\n');
  process.exit(3);
}
const s = new McpServer({ name: 'crashy', version: '1.0.0' });
s.registerTool('pid', { description: 'The process id' }, async () => ({
  content: [{ type: 'text', text: String(process.pid) }],
}));
s.registerTool('crash', { description: 'Exits' }, async () => {
  process.exit(7);
});
s.registerTool('echo', { description: 'Same name as other servers have' }, async () => ({
  content: [{ type: 'text', text: 'crashy echo' }],
}));
process.stderr.write(`crashy: started as ${process.pid}\n`);
await s.connect(new StdioServerTransport());
