import { describe, expect, it } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EventRow } from '../../db/types.ts';
import type { TriggerVariant } from '../../src/contract/schemas.ts';
import { COMMON_FIELDS, TRIGGERS } from '../../src/contract/triggers.ts';
import { buildFlowPayload } from '../../src/relay/flow.ts';
import { eventRow } from '../helpers.ts';

const ROOT = join(import.meta.dir, '../../shopify');
const EXT_DIR = join(ROOT, 'extensions');

interface ExtensionToml {
  extensions: { name: string; type: string; handle: string; description: string }[];
  settings: { fields: { type: string; key?: string; description?: string }[] };
}

function load(variant: string): ExtensionToml {
  return Bun.TOML.parse(readFileSync(join(EXT_DIR, variant, 'shopify.extension.toml'), 'utf8')) as ExtensionToml;
}

const REFERENCE_KEYS: Record<string, string> = {
  order_reference: 'order_id',
  customer_reference: 'customer_id',
  product_reference: 'product_id',
};

/** What a committed receipt for `variant` looks like after inbound mapping. */
function mappedEvent(variant: TriggerVariant): EventRow {
  const refers = TRIGGERS[variant].requires;
  return eventRow({
    id: 'evt_01jz0000000000000000000000',
    externalEventId: 'zap-1001',
    eventType: `${variant}.flagged`,
    resourceId: refers === 'resourceIdPath' ? '4501' : null,
    relatedResourceId: refers === 'relatedResourceIdPath' ? 'gid://shopify/InventoryItem/77' : null,
    bodyBytes: 120,
  });
}

const VARIANTS = Object.keys(TRIGGERS) as TriggerVariant[];

describe('Flow trigger extensions', () => {
  it('ships exactly one extension folder per trigger variant', () => {
    const dirs = readdirSync(EXT_DIR, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    expect(dirs.sort()).toEqual([...VARIANTS].sort());
    expect(dirs).toHaveLength(8);
  });

  it('declares an app config with the reference scopes and no secret', () => {
    const text = readFileSync(join(ROOT, 'shopify.app.toml'), 'utf8');
    const app = Bun.TOML.parse(text) as { name: string; client_id: string; access_scopes: { scopes: string } };
    expect(app.name).toBe('hookrelay');
    expect(app.client_id).toBe('replace-with-your-client-id');
    expect(app.access_scopes.scopes.split(',').sort()).toEqual(['read_customers', 'read_orders', 'read_products']);
    expect(text).not.toMatch(/secret\s*=|shpat_|shpss_/i);
  });

  for (const variant of VARIANTS) {
    describe(variant, () => {
      const def = TRIGGERS[variant];
      const toml = load(variant);

      it('is a flow_trigger whose name, handle and description match the contract', () => {
        expect(toml.extensions).toHaveLength(1);
        const ext = toml.extensions[0]!;
        expect(ext.type).toBe('flow_trigger');
        expect(ext.handle).toBe(def.handle);
        expect(ext.handle).toBe(`hookrelay-${variant}`);
        expect(ext.handle.length).toBeLessThanOrEqual(30);
        expect(ext.handle).toMatch(/^[a-z0-9-]+$/);
        expect(ext.name).toBe(def.name);
        expect(ext.description).toBe(def.description);
      });

      it('declares the reference field and the text fields of the contract, in order', () => {
        const fields = toml.settings.fields;
        const refs = fields.filter((f) => f.type.endsWith('_reference'));
        const texts = fields.filter((f) => f.type === 'single_line_text_field');
        expect(refs.length + texts.length).toBe(fields.length);
        expect(refs.map((f) => f.type)).toEqual(def.reference ? [def.reference.type] : []);
        for (const r of refs) expect(r.key).toBeUndefined();
        expect(texts.map((f) => f.key)).toEqual([...def.textFields]);
        expect(texts.map((f) => f.key)).toEqual(expect.arrayContaining([...COMMON_FIELDS]));
        for (const f of texts) {
          expect(f.key).toMatch(/^[A-Za-z]+( [A-Za-z]+)*$/);
          expect(f.description?.length ?? 0).toBeGreaterThan(0);
        }
      });

      it('matches the payload buildFlowPayload sends, key for key', () => {
        const declared = toml.settings.fields.map((f) => (f.type === 'single_line_text_field' ? f.key! : REFERENCE_KEYS[f.type]!));
        const payload = buildFlowPayload({ triggerVariant: variant, sourceLabel: 'Zapier' }, mappedEvent(variant));
        expect(Object.keys(payload).sort()).toEqual([...declared].sort());
        for (const f of toml.settings.fields) {
          if (f.type === 'single_line_text_field') expect(typeof payload[f.key!]).toBe('string');
          else expect(payload[REFERENCE_KEYS[f.type]!]).toBe(4501);
        }
        expect(payload['hookrelay event id']).toBe('evt_01jz0000000000000000000000');
        expect(payload['received at']).toBe('2026-06-17T12:00:00.000Z');
        if (def.requires === 'relatedResourceIdPath') expect(payload['related resource id']).toBe('gid://shopify/InventoryItem/77');
      });
    });
  }
});
