import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { EDITION } from '../../src/contract/scopes.ts';
import { INITIALIZE, rpc, startMcpServer, type McpServerUnderTest } from './harness.ts';

/** These tests spawn sandbox processes: a busy machine must not fail them on time. */
const SLOW = 30_000;

let s: McpServerUnderTest;
let client: Client;

beforeAll(async () => {
  s = await startMcpServer();
  client = await s.connect((await s.grant('operator')).token);
}, SLOW);
afterAll(() => s.stop());

/** A tool call's whole result: its structured content and the JSON of its text content. */
async function callRaw(name: string, args: Record<string, unknown>) {
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content as { type: string; text: string }[])[0]!.text;
  return { isError: r.isError === true, structured: r.structuredContent as Record<string, any> | undefined, text };
}

describe('MCP frames identify the edition', () => {
  it(
    'in initialize: serverInfo (title, description and an edition object) and the instructions',
    async () => {
      const init = await rpc(s.mcpUrl, INITIALIZE, { authorization: `Bearer ${(await s.grant()).token}` });
      expect(init.status).toBe(200);
      const { result } = (await init.json()) as any;
      expect(result.serverInfo).toMatchObject({ name: 'hookrelay', title: EDITION.name, edition: EDITION });
      expect(result.serverInfo.description).toContain(`${EDITION.platformKey}/${EDITION.editionKey}`);
      expect(result.instructions).toContain(EDITION.name);
      expect(result.instructions).toContain(EDITION.editionKey);

      // The SDK's client keeps the standard fields: what it shows identifies the edition too.
      expect(client.getServerVersion()).toMatchObject({ name: 'hookrelay', title: EDITION.name });
      expect(client.getServerVersion()!.description).toContain(EDITION.editionKey);
      expect(client.getInstructions()).toContain(EDITION.editionKey);
    },
    SLOW,
  );

  it(
    'in every tool result: structuredContent carries the edition, and the text is that same document',
    async () => {
      const results = {
        search: await callRaw('search', { query: 'replay', schemas: false }),
        executeOk: await callRaw('execute', { code: 'const { data } = await api.call("getCurrentAgentGrant", {}); return data.grant.tier;' }),
        executeThrows: await callRaw('execute', { code: 'throw new Error("no")' }),
        executeRefused: await callRaw('execute', {
          code: 'return await api.call("createReplayIntent", { params: { eventId: "evt_x" }, body: { mode: "preview", input: {} } });',
        }),
        // Refused by the SDK before any handler of ours runs: arguments failing the input schema, an unknown tool.
        badArguments: await callRaw('execute', { code: '' }),
        unknownTool: await callRaw('nosuchtool', {}),
      };
      expect(results.search.isError).toBe(false);
      expect(results.executeOk).toMatchObject({ isError: false, structured: { result: 'operator' } });
      for (const [name, r] of Object.entries(results).slice(2)) expect(r.isError, name).toBe(true);
      expect(results.badArguments.structured?.error.code).toBe('invalid_input');
      expect(results.unknownTool.structured?.error.code).toBe('invalid_input');
      for (const [name, r] of Object.entries(results)) {
        expect(r.structured?.edition, name).toEqual(EDITION);
        expect(JSON.parse(r.text), name).toEqual(r.structured!);
      }
    },
    SLOW,
  );
});
