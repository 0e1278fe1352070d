import { defineCommand } from 'citty';
import { EXPECTED_FIELDS, requireToken } from '../src/client/config.ts';
import { operations } from '../src/contract/operations.ts';
import { runStdioBridge } from '../src/mcp/bridge.ts';
import { connectionArgs } from './_args.ts';
import { connect } from './_cli.ts';

export default defineCommand({
  meta: {
    name: 'mcp',
    examples: ['hookrelay mcp --profile prod  # in a desktop client\'s MCP server command'],
    description:
      "Stdio MCP server for desktop clients: forwards to the remote MCP endpoint (POST /agent/v1/mcp) with the configured base URL and grant token. stdout carries MCP frames only; logs go to stderr.",
  },
  args: { ...connectionArgs },
  async run({ args }) {
    const { config, log } = await connect(args, { token: 'required' });
    const headers: Record<string, string> = { authorization: `Bearer ${requireToken(config)}` };
    for (const f of EXPECTED_FIELDS) {
      const v = config.expected[f.key]?.value;
      if (v !== undefined) headers[f.header] = v;
    }
    await runStdioBridge({ url: new URL(`${config.baseUrl.value}${operations.connectMcpAgentOperations.path}`), headers, log });
  },
});
