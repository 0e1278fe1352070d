/** Typed fields over MCP: the catalogue shows them (derived from the contract table) and code mode creates and edits with them. */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { execute, startMcpServer, tool, type McpServerUnderTest } from './harness.ts';

const SLOW = 30_000;
let s: McpServerUnderTest;
let client: Client;

beforeAll(async () => {
  s = await startMcpServer();
  client = await s.connect((await s.grant('admin_assistant')).token);
}, SLOW);
afterAll(() => s.stop());

describe('endpoint fields over MCP', () => {
  it(
    'search shows fields and includeBody on createEndpoint; code mode creates with them, previews an edit and its dry run',
    async () => {
      const found = await tool(client, 'search', { code: "return catalogue.find((o) => o.operationId === 'createEndpoint')" });
      expect(JSON.stringify(found.doc)).toContain('includeBody');
      expect(JSON.stringify(found.doc)).toContain('"datetime"');

      const r = await execute(
        client,
        `const fields = [{ name: 'score', path: 'answers.score', type: 'number' }];
         const made = await api.call('createEndpoint', { body: { triggerVariant: 'generic', fields } });
         const params = { endpointId: made.data.endpoint.id };
         const edit = await api.call('createEndpointEditIntent', { params, body: { mode: 'preview', input: { fields: [...fields, { name: 'tier', path: 'customer.tier', type: 'text' }], includeBody: true } } });
         let refused = null;
         try { await api.call('createEndpoint', { body: { triggerVariant: 'generic', fields: [{ name: 'score', path: 'a', type: 'money' }] } }); } catch (e) { refused = e.code; }
         return { fields: made.data.endpoint.fields, changes: edit.data.intent.preview.changes.map((c) => c.field), dryRun: edit.data.intent.preview.fieldDryRun, refused };`,
      );
      expect(r.doc.error).toBeUndefined();
      expect(r.doc.result).toEqual({
        fields: [{ name: 'score', path: 'answers.score', type: 'number' }],
        changes: ['fields', 'includeBody'],
        dryRun: {
          events: 0,
          fields: [
            { name: 'score', found: 0, missing: 0, wrongType: 0 },
            { name: 'tier', found: 0, missing: 0, wrongType: 0 },
          ],
        },
        refused: 'invalid_input',
      });
    },
    SLOW,
  );
});
