import { defineCommand } from 'citty';
import { operations } from '../src/contract/operations.ts';
import { connectionArgs } from './_args.ts';
import { connect, emit } from './_cli.ts';

export default defineCommand({
  meta: {
    name: 'docs',
    description: 'Discovery pointers from the public manifest: human docs, OpenAPI, MCP URL, status',
    examples: ['hookrelay docs --base-url https://relay.example.com'],
  },
  args: { ...connectionArgs },
  async run({ args }) {
    const { client } = await connect(args, { token: 'none' });
    const { body: m } = await client.call('getAgentOperationsManifest');
    emit({
      edition: m.edition,
      schemaVersion: m.schemaVersion,
      docs: m.docs,
      quickstart: m.quickstart,
      operations: { served: m.operations.filter((o) => o.available).length, declared: m.operations.length },
      mcp: { url: m.docs.mcp, path: operations.connectMcpAgentOperations.path },
      rereadGuidance: m.rereadGuidance,
    });
  },
});
