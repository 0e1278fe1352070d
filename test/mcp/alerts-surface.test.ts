/**
 * The silence watch and alerts as every face of the contract shows them: the OpenAPI document (expectedEvery on the
 * endpoint, its creation and its edit; alerts on the reliability reads), the manifest, the MCP catalogue through the
 * SDK's own client, and the CLI's create-endpoint --expected-every.
 */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi } from '../../src/contract/openapi.ts';
import { cli, scratchHome, startApi } from '../cli/harness.ts';
import { startMcpServer, tool, type McpServerUnderTest } from './harness.ts';

setDefaultTimeout(60_000);

type Schema = { properties?: Record<string, Schema & { description?: string }>; $ref?: string; anyOf?: Schema[]; description?: string; pattern?: string };

let s: McpServerUnderTest;
beforeAll(async () => {
  s = await startMcpServer();
});
afterAll(async () => {
  await s.stop();
});

describe('OpenAPI', () => {
  const doc = buildOpenApi() as { components: { schemas: Record<string, Schema> } };
  const props = (name: string) => doc.components.schemas[name]!.properties!;

  it('shows expectedEvery on the endpoint, its creation and its edit, described, with its form', () => {
    expect(props('Endpoint').expectedEvery!.description).toContain('Silence watch');
    const create = props('CreateEndpointInput').expectedEvery!;
    expect(create.description).toContain('hookrelay-alert');
    expect(create.pattern).toBe('^(\\d{1,6})([smhd])$');
    expect(JSON.stringify(props('EndpointEditInput').expectedEvery)).toContain('null switches the watch off');
  });

  it('shows the alerts of the reliability reads, each kind and handoff state named', () => {
    const alerts = props('ReliabilityHealthRead').alerts!;
    expect(alerts.description).toContain('hookrelay-alert');
    const alert = doc.components.schemas.Alert!;
    expect(Object.keys(alert.properties!).sort()).toEqual([
      'endpoint',
      'handoff',
      'id',
      'kind',
      'raisedAt',
      'recommendedAction',
      'recoveredAt',
      'since',
      'state',
      'summary',
    ]);
    expect(JSON.stringify(alert.properties!.kind)).toContain('auth_failures');
  });
});

describe('manifest and MCP catalogue', () => {
  it('the manifest tells an agent how to watch for silence and where alerts show', async () => {
    const manifest = (await (await fetch(`${s.url}/agent/v1/manifest`)).json()) as { quickstart: string[] };
    expect(manifest.quickstart.some((l) => l.includes('expectedEvery') && l.includes('hookrelay-alert'))).toBe(true);
  });

  it('search shows expectedEvery in createEndpoint and the edit intent, and alerts in the reliability read', async () => {
    const { token } = await s.grant('observer');
    const client = await s.connect(token);
    const found = await tool(client, 'search', { query: 'endpoint' });
    expect(found.isError).toBe(false);
    const op = (id: string) => found.doc.operations.find((o: { operationId: string }) => o.operationId === id);
    expect(JSON.stringify(op('createEndpoint').input.body)).toContain('expectedEvery');
    expect(JSON.stringify(op('createEndpoint').output)).toContain('expectedEvery');
    expect(JSON.stringify(op('createEndpointEditIntent').input.body)).toContain('null switches the watch off');
    const reliability = await tool(client, 'search', { query: 'reliability tenant' });
    const read = reliability.doc.operations.find((o: { operationId: string }) => o.operationId === 'getTenantReliabilityHealth');
    expect(JSON.stringify(read.output)).toContain('recommendedAction');
    expect(JSON.stringify(read.output)).toContain('handoff_paused');
  });
});

describe('hookrelay create-endpoint --expected-every', () => {
  it('sets the watch on the created endpoint; a bad duration exits 2 before anything is sent', async () => {
    const api = await startApi();
    const home = scratchHome();
    try {
      const token = await api.grant('operator');
      const file = join(home.dir, 'ep.json');
      writeFileSync(file, JSON.stringify({ triggerVariant: 'generic', name: 'watched' }));
      const run = (args: string[]) => cli(args, { home: home.dir, env: { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token } });
      const ok = await run(['create-endpoint', '--json', file, '--expected-every', '2h']);
      expect(ok.code).toBe(0);
      expect(ok.json.data.endpoint).toMatchObject({ name: 'watched', expectedEvery: '2h' });
      const bad = await run(['create-endpoint', '--json', file, '--expected-every', '2 hours']);
      expect(bad.code).toBe(2);
      expect(bad.json.error.code).toBe('invalid_input');
      expect(bad.json.error.message).toContain('body.expectedEvery');
      expect((await api.env.repo.listEndpoints((await api.env.repo.listStores())[0]!.id)).length).toBe(1);

      // The README's edit intent through `request`: preview, then execute with the confirmation token.
      const ep = ok.json.data.endpoint.id as string;
      const body = (name: string, doc: unknown) => {
        const f = join(home.dir, name);
        writeFileSync(f, JSON.stringify(doc));
        return f;
      };
      const path = `/agent/v1/endpoints/${ep}/edit-intents`;
      const preview = await run(['request', 'POST', path, '--json', body('watch.json', { mode: 'preview', input: { expectedEvery: null } })]);
      expect(preview.code).toBe(0);
      const intent = preview.json.data.intent;
      expect(intent.preview.changes).toEqual([{ field: 'expectedEvery', from: '2h', to: null }]);
      const go = body('go.json', { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token });
      expect((await run(['request', 'POST', path, '--json', go, '--idempotency-key', 'watch-1'])).code).toBe(0);
      expect((await run(['request', 'GET', `/agent/v1/endpoints/${ep}`])).json.data.endpoint.expectedEvery).toBeNull();
    } finally {
      await api.stop();
      home.cleanup();
    }
  });
});
