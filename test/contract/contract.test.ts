import { describe, expect, it } from 'bun:test';
import { existsSync } from 'node:fs';
import { writeMigrationIndex } from '../../db/migration-index.ts';
import { apiVersionStatus } from '../../src/platform/shopify/version.ts';
import { buildManifest } from '../../src/contract/manifest.ts';
import { buildOpenApi } from '../../src/contract/openapi.ts';
import { OPERATIONS } from '../../src/contract/operations.ts';
import { AgentOperationsManifestSchema } from '../../src/contract/schemas.ts';
import { SNAPSHOT_PATH, SNAPSHOT_SERVER } from '../../scripts/openapi.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
/** The spec's endpoint table, copied into the repo (see the file's header) so this test reads nothing outside it. */
const SPEC = new URL('../fixtures/agent-operations-table.md', import.meta.url).pathname;

async function specTable() {
  const text = await Bun.file(SPEC).text();
  const rows = text.split('\n').filter((l) => /^\| (GET|POST) \| \/agent\/v1/.test(l));
  return rows.map((l) => {
    const [method, path, operationId, scopes, effect, confirmation] = l
      .split('|')
      .slice(1, 7)
      .map((c) => c.trim());
    return {
      method,
      path,
      operationId,
      scopes: scopes === 'none (public)' || scopes === 'none' ? [] : scopes!.split(',').map((s) => s.trim()),
      effect,
      confirmation: confirmation === 'required',
    };
  });
}

/** Operations beyond the spec's table, each decided in DESIGN.md: the contract declares these and no others. */
const EXTENSIONS = [
  {
    method: 'GET',
    path: '/agent/v1/audit',
    operationId: 'listAuditEntries',
    scopes: ['setup:read'],
    effect: 'read_only',
    confirmation: false,
  },
  {
    method: 'POST',
    path: '/agent/v1/replay-intents',
    operationId: 'createBulkReplayIntent',
    scopes: ['event:read', 'replay:execute'],
    effect: 'preview_or_execute',
    confirmation: true,
  },
];

const facts = (o: (typeof OPERATIONS)[number]) => ({
  method: o.method,
  path: o.path,
  operationId: o.operationId,
  scopes: [...o.scopes],
  effect: o.effect,
  confirmation: o.confirmation,
});

describe('contract table', () => {
  it('declares exactly the 22 operations of the spec, with their method, path, scopes, effect and confirmation, in its order', async () => {
    expect(existsSync(SPEC)).toBe(true);
    const spec = await specTable();
    expect(spec).toHaveLength(22);
    const ours = OPERATIONS.filter((o) => !o.extension).map(facts);
    expect(ours as unknown[]).toEqual(spec);
  });

  it('declares the extensions beyond the spec and nothing else, each marked and saying where it was decided', () => {
    const extensions = OPERATIONS.filter((o) => o.extension);
    expect(extensions.map(facts) as unknown[]).toEqual(EXTENSIONS);
    for (const o of extensions) expect(o.extension, o.operationId).toContain('DESIGN.md');
    expect(OPERATIONS).toHaveLength(22 + EXTENSIONS.length);
  });

  it('has unique operationIds and unique method + path', () => {
    expect(new Set(OPERATIONS.map((o) => o.operationId)).size).toBe(OPERATIONS.length);
    expect(new Set(OPERATIONS.map((o) => `${o.method} ${o.path}`)).size).toBe(OPERATIONS.length);
  });

  it('gives every POST a request body schema and every operation a response schema', () => {
    for (const o of OPERATIONS) {
      if (o.method === 'POST') expect(o.body, o.operationId).toBeDefined();
      expect(o.response, o.operationId).toBeDefined();
    }
  });
});

describe('OpenAPI', () => {
  const doc = buildOpenApi(SNAPSHOT_SERVER) as any;

  it('is 3.1.0 with schema version 2026-06-17 and every operation', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('2026-06-17');
    for (const o of OPERATIONS) {
      const entry = doc.paths[o.path]?.[o.method.toLowerCase()];
      expect(entry?.operationId, o.operationId).toBe(o.operationId);
      expect(entry['x-effect']).toBe(o.effect);
      expect(entry['x-scopes']).toEqual([...o.scopes]);
      expect(entry['x-extension'], o.operationId).toBe(o.extension ? true : undefined);
    }
  });

  it('has real request and response schemas, no empty placeholders', () => {
    const schemas = doc.components.schemas as Record<string, any>;
    const resolve = (s: any) => (s.$ref ? schemas[s.$ref.split('/').pop()] : s);
    for (const o of OPERATIONS) {
      const op = doc.paths[o.path][o.method.toLowerCase()];
      const success = resolve(op.responses[String(o.successStatus)].content['application/json'].schema);
      expect(success, o.operationId).toBeDefined();
      expect(Object.keys(success.properties ?? {}).length, o.operationId).toBeGreaterThan(0);
      if (o.envelope) {
        const data = resolve(success.properties.data);
        expect(Object.keys(data.properties ?? {}).length, `${o.operationId} data`).toBeGreaterThan(0);
      }
      if (o.body) {
        const body = resolve(op.requestBody.content['application/json'].schema);
        const filled = Object.keys(body.properties ?? {}).length > 0 || (body.oneOf ?? body.anyOf ?? []).length > 0;
        expect(filled, `${o.operationId} request`).toBe(true);
      }
    }
  });

  it('matches the committed snapshot (run `bun run openapi` after changing the contract)', async () => {
    const committed = await Bun.file(`${ROOT}${SNAPSHOT_PATH}`).json();
    expect(committed).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it('passes redocly lint', () => {
    const r = Bun.spawnSync([`${ROOT}node_modules/.bin/redocly`, 'lint', '--format=stylish', SNAPSHOT_PATH], {
      cwd: ROOT,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    const out = `${r.stdout.toString()}${r.stderr.toString()}`;
    expect(out).toContain('valid');
    expect(r.exitCode, out).toBe(0);
  }, 60_000);
});

describe('manifest', () => {
  it('lists every operation with its contract facts and absolute discovery URLs', () => {
    const m = buildManifest('https://relay.example', new Set(['getAgentOperationsManifest']), {
      adminApiVersion: apiVersionStatus(Date.parse('2026-11-25T00:00:00Z')),
    });
    expect(m.platform).toEqual({
      platformKey: 'shopify',
      adminApiVersion: { version: '2026-10', releasedOn: '2026-10-01', supportedUntil: '2027-10-01', daysLeft: 310, status: 'supported' },
    });
    expect(AgentOperationsManifestSchema.safeParse(m).success).toBe(true);
    expect(m.operations.map((o) => o.operationId)).toEqual(OPERATIONS.map((o) => o.operationId));
    expect(m.docs.openapi).toBe('https://relay.example/agent/v1/openapi.json');
    expect(m.edition.editionKey).toBe('workflow-automation');
    expect(m.operations.find((o) => o.operationId === 'listEvents')?.available).toBe(false);
    expect(m.authentication.tiers.admin_assistant).toHaveLength(10);
  });

  it("marks the operations beyond the spec's table, saying where each was decided, and only those", () => {
    const m = buildManifest('https://relay.example', new Set(), { adminApiVersion: apiVersionStatus(Date.parse('2026-11-25T00:00:00Z')) });
    const marked = m.operations.filter((o) => o.extension);
    expect(marked.map((o) => o.operationId)).toEqual(EXTENSIONS.map((e) => e.operationId));
    expect(marked.map((o) => o.operationId)).toContain('createBulkReplayIntent');
    for (const o of m.operations) {
      const row = OPERATIONS.find((op) => op.operationId === o.operationId)!;
      expect(o.extension, o.operationId).toBe(row.extension ? true : undefined);
      expect(o.extensionDecidedIn, o.operationId).toBe(row.extension);
    }
    expect(marked.every((o) => o.extensionDecidedIn?.startsWith('DESIGN.md'))).toBe(true);
    expect(AgentOperationsManifestSchema.safeParse(m).success).toBe(true);
  });
});

describe('migrations bundle', () => {
  it('db/migrations/sqlite/index.ts matches the drizzle-kit journal (run `bun run db:generate`)', async () => {
    const expected = await writeMigrationIndex(`${ROOT}db/migrations/sqlite`);
    expect(await Bun.file(`${ROOT}db/migrations/sqlite/index.ts`).text()).toBe(expected);
  });
});
