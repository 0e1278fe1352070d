/**
 * Confirm the run in every face the contract derives: the served OpenAPI document, the manifest, and the MCP
 * catalogue (`search`, read with the SDK's own client) show the events list's `unconfirmedFor` filter, an event's
 * `confirmation` and the reliability read's confirmed share.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startMcpServer, tool, type McpServerUnderTest } from './harness.ts';

let s: McpServerUnderTest;
let client: Client;

beforeAll(async () => {
  s = await startMcpServer();
  client = await s.connect((await s.grant('observer')).token);
});
afterAll(() => s.stop());

/** A schema with its `$ref` followed into `defs`. */
const deref = (schema: any, defs: Record<string, any>): any => (schema?.$ref ? defs[schema.$ref.split('/').pop()] : schema);

describe('Confirm the run in the contract', () => {
  it('OpenAPI documents unconfirmedFor on listEvents, confirmation on events and results, and the confirmed share', async () => {
    const doc = (await (await fetch(`${s.url}/agent/v1/openapi.json`)).json()) as any;
    const schemas = doc.components.schemas;
    const param = doc.paths['/agent/v1/events'].get.parameters.find((p: any) => p.name === 'unconfirmedFor');
    expect(param).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 43_200 } });
    expect(param.description ?? param.schema.description).toContain('Confirm hookrelay event');
    expect(doc.paths['/agent/v1/events'].get.description).toContain('unconfirmedFor');

    const confirmation = schemas.EventConfirmation;
    expect(Object.keys(confirmation.properties).sort()).toEqual(['confirmedAt', 'note', 'outcome', 'runs']);
    expect(confirmation.required.sort()).toEqual(['confirmedAt', 'outcome', 'runs']);
    expect(confirmation.properties.outcome.enum).toEqual(['ok', 'error']);
    expect(JSON.stringify(schemas.EventDetail.properties.confirmation)).toContain('#/components/schemas/EventConfirmation');
    expect(schemas.EventDetail.required).toContain('confirmation');
    expect(schemas.EventResult.properties.downstreamConfirmed.type).toBe('boolean');
    expect(JSON.stringify(schemas.EventResult.properties.confirmation)).toContain('#/components/schemas/EventConfirmation');
    expect(JSON.stringify(schemas.ReliabilityHealthRead.properties.confirmations)).toContain('#/components/schemas/ConfirmedShare');
    expect(Object.keys(schemas.ConfirmedShare.properties).sort()).toEqual(['byEndpoint', 'byTrigger', 'confirmed', 'delivered', 'errored', 'share']);
  });

  it('the manifest says how downstream completion is confirmed and found missing', async () => {
    const manifest = (await (await fetch(`${s.url}/agent/v1/manifest`)).json()) as { safetyBoundaries: string[] };
    const line = manifest.safetyBoundaries.find((b) => b.startsWith('`delivered`'))!;
    expect(line).toContain('Confirm hookrelay event');
    expect(line).toContain('unconfirmedFor');
  });

  it('the MCP catalogue shows the filter in listEvents input and the new fields in the outputs', async () => {
    const { doc } = await tool(client, 'search', { query: 'event' });
    const byId = Object.fromEntries((doc.operations as any[]).map((o) => [o.operationId, o]));
    const filter = byId.listEvents.input.query.properties.unconfirmedFor;
    expect(filter).toMatchObject({ type: 'integer', minimum: 1, maximum: 43_200 });
    expect(filter.description).toContain('did not finish');
    expect(byId.listEvents.description).toContain('unconfirmedFor');

    // Outputs are JSON Schemas whose named parts are in $defs.
    const defsOf = (id: string) => byId[id].output.$defs as Record<string, any>;
    const detail = defsOf('getEventDetail');
    expect(detail.EventDetail.properties.confirmation.anyOf).toContainEqual({ $ref: '#/$defs/EventConfirmation' });
    expect(Object.keys(detail.EventConfirmation.properties).sort()).toEqual(['confirmedAt', 'note', 'outcome', 'runs']);
    const result = defsOf('getLatestEventResult');
    expect(result.EventResult.properties.downstreamConfirmed.type).toBe('boolean');
    expect(result.EventResult.properties.confirmation.anyOf).toContainEqual({ $ref: '#/$defs/EventConfirmation' });

    const { doc: reliability } = await tool(client, 'search', { query: 'tenant reliability' });
    const health = reliability.operations.find((o: any) => o.operationId === 'getTenantReliabilityHealth').output;
    const share = deref(deref(health, health.$defs).properties.confirmations.anyOf[0], health.$defs);
    expect(Object.keys(share.properties).sort()).toEqual(['byEndpoint', 'byTrigger', 'confirmed', 'delivered', 'errored', 'share']);
  });
});
