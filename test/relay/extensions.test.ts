import { describe, expect, it } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EventRow } from '../../db/types.ts';
import type { TriggerVariant } from '../../src/contract/schemas.ts';
import { BODY_FIELDS, COMMON_FIELDS, SENDER_FIELD, TRIGGERS } from '../../src/contract/triggers.ts';
import { FLOW_TEMPLATES } from '../../src/contract/templates.ts';
import { FIELD_TYPES } from '../../src/contract/triggers.ts';
import { apiVersionStatus, SHOPIFY_ADMIN_API_VERSION } from '../../src/platform/shopify/version.ts';
import { APP_TOPICS, COMPLIANCE_TOPICS, WEBHOOK_PATH } from '../../src/platform/shopify/webhooks.ts';
import { CONFIRM_ACTION } from '../../src/contract/triggers.ts';
import { buildFlowPayload } from '../../src/platform/shopify/flow.ts';
import { BASE, createTestEnv, eventRow } from '../helpers.ts';

const ROOT = join(import.meta.dir, '../../shopify');
const EXT_DIR = join(ROOT, 'extensions');

interface ExtensionToml {
  extensions: { name: string; type: string; handle: string; description: string; schema?: string }[];
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
const LIFECYCLE_DIR = 'lifecycle-callback';
const CONFIRM_DIR = 'confirm-action';
/** The alert trigger (test/relay/alerts.test.ts checks it against ALERT_TRIGGER and the payload sent). */
const ALERT_DIR = 'alert';

/**
 * The fields Shopify documents for each extension type, copied here so the test needs no network:
 * - flow_trigger: shopify.dev/docs/apps/build/flow/triggers/reference ("Trigger extension properties": name,
 *   type, handle required, description optional; handle at most 30 characters, alphanumerics and hyphens, unique
 *   across the app's extensions; "Trigger extension fields": [[settings.fields]] with type, key, description,
 *   key required except for reference types) and …/flow/configure-complex-data-types (`schema`: the path of a
 *   GraphQL SDL file; a field of type `schema.<Type>` names a type it defines; basic types String, Int, Float,
 *   Boolean, ID, with objects, lists and `!`). The Shopify CLI's flow_trigger specification (@shopify/cli 4.8.2,
 *   which shopify-cli.test.ts runs on this folder) takes `schema`, keys of letters and spaces only, field types boolean, email, single_line_text_field, url,
 *   number_decimal, `schema.<Type>` and the order, customer, product, company and company_contact references,
 *   and refuses a `schema.` field without `schema`.
 * - flow_trigger_lifecycle_callback: shopify.dev/docs/apps/build/flow/track-lifecycle-events and the Shopify
 *   CLI's extension specification (name, handle, type, url; uid is added by the CLI). The url is an absolute
 *   HTTPS URL, or since 2025 a path relative to the app's application_url (never protocol-relative `//`).
 * - flow_action: shopify.dev/docs/apps/build/flow/actions/reference ("Action extension fields": name, type, handle,
 *   runtime_url required; description, validation_url, config_page_url, config_page_preview_url, schema and
 *   return_type_ref optional) and the Shopify CLI's flow_action specification (runtime_url an absolute HTTPS URL;
 *   [[settings.fields]] with type, key, name, description, required: key and name required except for reference
 *   types; field types boolean, email, multi_line_text_field, number_integer, number_decimal,
 *   single_line_text_field, url, or a reference).
 */
const DOCUMENTED: Record<string, { required: string[]; optional: string[]; sections: string[]; fieldKeys?: string[] }> = {
  flow_trigger: { required: ['name', 'type', 'handle'], optional: ['description', 'schema'], sections: ['extensions', 'settings'] },
  flow_trigger_lifecycle_callback: { required: ['name', 'type', 'handle', 'url'], optional: ['uid'], sections: ['extensions'] },
  // test/relay/templates.test.ts checks the [extensions.template] table.
  flow_template: { required: ['name', 'type', 'handle', 'description'], optional: ['template'], sections: ['extensions'] },
  flow_action: {
    required: ['name', 'type', 'handle', 'runtime_url'],
    optional: ['description', 'validation_url', 'config_page_url', 'config_page_preview_url', 'schema', 'return_type_ref'],
    sections: ['extensions', 'settings'],
    fieldKeys: ['type', 'key', 'name', 'description', 'required'],
  },
};
const DOCUMENTED_FIELD_KEYS = ['type', 'key', 'description'];
const TRIGGER_FIELD_TYPES = ['boolean', 'email', 'single_line_text_field', 'url', 'number_decimal'];
const TRIGGER_REFERENCES = ['customer_reference', 'order_reference', 'product_reference', 'company_reference', 'company_contact_reference'];
const ACTION_FIELD_TYPES = ['boolean', 'email', 'multi_line_text_field', 'number_integer', 'number_decimal', 'single_line_text_field', 'url'];

/**
 * The object types of a GraphQL SDL file as `{ Type: { field: 'Type!' } }`: enough of the language Flow takes
 * (objects, lists, `!`) to hold the schema file to the contract. Comments and descriptions are dropped.
 */
function sdlTypes(sdl: string): Record<string, Record<string, string>> {
  const text = sdl
    .replace(/#.*$/gm, '')
    .replace(/"""[\s\S]*?"""/g, '')
    .replace(/"[^"\n]*"/g, '');
  const out: Record<string, Record<string, string>> = {};
  for (const m of text.matchAll(/type\s+(\w+)\s*\{([^}]*)\}/g)) {
    out[m[1]!] = Object.fromEntries([...m[2]!.matchAll(/(\w+)\s*:\s*([\w![\]]+)/g)].map((f) => [f[1]!, f[2]!]));
  }
  return out;
}

/** Every shopify.extension.toml under shopify/extensions, parsed. */
function allExtensionFiles(): { dir: string; toml: Record<string, any> }[] {
  return readdirSync(EXT_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => ({ dir: d.name, toml: Bun.TOML.parse(readFileSync(join(EXT_DIR, d.name, 'shopify.extension.toml'), 'utf8')) as Record<string, any> }));
}

describe('Flow trigger extensions', () => {
  it('ships one extension folder per trigger variant, the alert trigger, the lifecycle callback, the confirm action and each workflow template', () => {
    const dirs = readdirSync(EXT_DIR, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(dirs.sort()).toEqual([...VARIANTS, ALERT_DIR, LIFECYCLE_DIR, CONFIRM_DIR, ...FLOW_TEMPLATES.map((t) => t.dir)].sort());
    expect(dirs).toHaveLength(14);
  });

  it('every extension file uses only the fields Shopify documents for its type, with the required ones present', () => {
    const files = allExtensionFiles();
    const handles: string[] = [];
    for (const { dir, toml } of files) {
      expect(
        Object.keys(toml).every((k) => DOCUMENTED[toml.extensions?.[0]?.type]?.sections.includes(k)),
        `${dir}: top-level sections`,
      ).toBe(true);
      expect(toml.extensions, dir).toHaveLength(1);
      const ext = toml.extensions[0] as Record<string, unknown>;
      const doc = DOCUMENTED[ext.type as string];
      expect(doc, `${dir}: documented type`).toBeDefined();
      for (const k of doc!.required) expect(typeof ext[k] === 'string' && (ext[k] as string).length > 0, `${dir}: ${k}`).toBe(true);
      for (const k of Object.keys(ext)) expect([...doc!.required, ...doc!.optional], `${dir}: ${k} is documented`).toContain(k);
      const handle = ext.handle as string;
      expect(handle.length, dir).toBeLessThanOrEqual(30);
      expect(handle, dir).toMatch(/^[A-Za-z0-9-]+$/);
      handles.push(handle);
      for (const f of (toml.settings?.fields ?? []) as Record<string, unknown>[]) {
        for (const k of Object.keys(f)) expect(doc!.fieldKeys ?? DOCUMENTED_FIELD_KEYS, `${dir}: field ${k}`).toContain(k);
        expect(typeof f.type, dir).toBe('string');
        if (!(f.type as string).endsWith('_reference')) expect(typeof f.key, `${dir}: ${f.type} needs a key`).toBe('string');
      }
    }
    expect(new Set(handles).size).toBe(files.length);
  });

  it('ships the lifecycle callback pointing at the /flow/lifecycle route this server answers, on the app URL', async () => {
    const { toml } = allExtensionFiles().find((f) => f.dir === LIFECYCLE_DIR)!;
    const ext = toml.extensions[0];
    expect(ext.type).toBe('flow_trigger_lifecycle_callback');
    const app = Bun.TOML.parse(readFileSync(join(ROOT, 'shopify.app.toml'), 'utf8')) as { application_url: string };
    const url = new URL(ext.url, app.application_url);
    expect(ext.url.startsWith('//')).toBe(false);
    expect(url.protocol).toBe('https:');
    expect(url.origin).toBe(new URL(app.application_url).origin);
    expect(url.pathname).toBe('/flow/lifecycle');
    // The route is real: an unsigned callback gets the lifecycle handler's own answer, not the router's 404.
    const env = await createTestEnv({ env: (name) => (name === 'HOOKRELAY_SHOPIFY_APP_SECRET' ? 'app-secret' : undefined) });
    const res = await env.app.fetch(new Request(`${BASE}${url.pathname}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }));
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe('SVC_AUTH_HEADER_MISSING');
  });

  it('ships the confirm action: a flow_action whose runtime_url is the /flow/actions/confirm route this server answers, on the app URL', async () => {
    const { toml } = allExtensionFiles().find((f) => f.dir === CONFIRM_DIR)!;
    const ext = toml.extensions[0];
    expect(ext).toMatchObject({ type: 'flow_action', handle: CONFIRM_ACTION.handle, name: 'Confirm hookrelay event' });
    const app = Bun.TOML.parse(readFileSync(join(ROOT, 'shopify.app.toml'), 'utf8')) as { application_url: string };
    // Shopify CLI takes only an absolute HTTPS runtime_url (not a path, unlike the lifecycle callback's url).
    const url = new URL(ext.runtime_url);
    expect(ext.runtime_url).toBe(url.href);
    expect(url.protocol).toBe('https:');
    expect(url.origin).toBe(new URL(app.application_url).origin);
    expect(url.pathname).toBe(CONFIRM_ACTION.path);
    // Its fields are the keys the handler reads: the event id required, outcome and note optional, each named.
    const fields = toml.settings.fields as { type: string; key: string; name: string; description: string; required: boolean }[];
    expect(fields.map((f) => [f.key, f.required])).toEqual([
      [CONFIRM_ACTION.fields.eventId, true],
      [CONFIRM_ACTION.fields.outcome, false],
      [CONFIRM_ACTION.fields.note, false],
    ]);
    for (const f of fields) {
      expect(ACTION_FIELD_TYPES, f.key).toContain(f.type);
      expect(f.name.length, f.key).toBeGreaterThan(0);
      expect(f.description.length, f.key).toBeGreaterThan(0);
    }
    // The route is real: an unsigned run gets the confirmation handler's own answer, not the router's 404.
    const env = await createTestEnv({ env: (name) => (name === 'HOOKRELAY_SHOPIFY_APP_SECRET' ? 'app-secret' : undefined) });
    const res = await env.app.fetch(new Request(`${BASE}${url.pathname}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }));
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe('SVC_AUTH_HEADER_MISSING');
  });

  it('declares an app config with the reference scopes and no secret', () => {
    const text = readFileSync(join(ROOT, 'shopify.app.toml'), 'utf8');
    const app = Bun.TOML.parse(text) as { name: string; client_id: string; access_scopes: { scopes: string } };
    expect(app.name).toBe('hookrelay');
    expect(app.client_id).toBe('replace-with-your-client-id');
    expect(app.access_scopes.scopes.split(',').sort()).toEqual(['read_customers', 'read_orders', 'read_products']);
    expect(text).not.toMatch(/secret\s*=|shpat_|shpss_/i);
  });

  it('subscribes the webhook topics and the compliance topics at /shopify/webhooks, and redirects installs to /auth/callback, routes this server answers', async () => {
    type Subscription = { topics?: string[]; compliance_topics?: string[]; uri: string };
    const app = Bun.TOML.parse(readFileSync(join(ROOT, 'shopify.app.toml'), 'utf8')) as {
      application_url: string;
      auth: { redirect_urls: string[] };
      webhooks: { api_version: string; subscriptions: Subscription[] };
    };
    const origin = new URL(app.application_url).origin;
    const subs = app.webhooks.subscriptions;
    expect(subs.flatMap((s) => s.topics ?? []).sort()).toEqual([...APP_TOPICS].sort());
    expect(subs.flatMap((s) => s.compliance_topics ?? []).sort()).toEqual([...COMPLIANCE_TOPICS].sort());
    for (const s of subs) {
      const url = new URL(s.uri, app.application_url);
      expect(url.protocol).toBe('https:');
      expect(url.origin).toBe(origin);
      expect(url.pathname).toBe(WEBHOOK_PATH);
    }
    expect(app.auth.redirect_urls.map((u) => new URL(u))).toEqual([new URL('/auth/callback', origin)]);

    // Both routes are real: an unsigned webhook gets the webhook handler's own 401, an unsigned callback the install's.
    const vars: Record<string, string> = { HOOKRELAY_SHOPIFY_APP_SECRET: 'app-secret', HOOKRELAY_SHOPIFY_CLIENT_ID: 'client-id' };
    const env = await createTestEnv({ env: (name) => vars[name] });
    const hook = await env.app.fetch(
      new Request(`${BASE}${WEBHOOK_PATH}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', 'x-shopify-topic': 'shop/redact' } }),
    );
    expect(hook.status).toBe(401);
    expect(((await hook.json()) as { code: string }).code).toBe('SVC_AUTH_HEADER_MISSING');
    const callback = await env.app.fetch(new Request(`${BASE}/auth/callback?shop=demo.myshopify.com&code=x&state=y&timestamp=1`));
    expect(callback.status).toBe(401);
    expect(await callback.text()).toContain('signature does not verify');
    // The app's own page, where Shopify sends a merchant who opens the app: asks for Shopify's signed launch.
    expect(new URL(app.application_url).pathname).toBe('/app');
    const opened = await env.app.fetch(new Request(`${BASE}/app?shop=demo.myshopify.com`));
    expect(opened.status).toBe(401);
    expect(await opened.text()).toContain('Open hookrelay from your Shopify admin');
  });

  it('declares the Admin API version the relay speaks, one still supported today', () => {
    const app = Bun.TOML.parse(readFileSync(join(ROOT, 'shopify.app.toml'), 'utf8')) as { webhooks: { api_version: string } };
    expect(app.webhooks.api_version).toBe(SHOPIFY_ADMIN_API_VERSION);
    expect(apiVersionStatus(Date.now()).status).not.toBe('unsupported');
  });

  it("ships in every trigger folder a byte-equal copy of shopify/_shared/sender.graphql, declaring the sender's custom types of the contract", () => {
    // Shopify CLI reads a trigger's `schema` from its own folder (flow_trigger spec: loadSchemaFromPath(extension
    // directory, schema)), so each folder needs its copy; the shared file is the one to edit.
    const source = readFileSync(join(ROOT, '_shared/sender.graphql'), 'utf8');
    for (const v of VARIANTS) expect(readFileSync(join(EXT_DIR, v, SENDER_FIELD.schema), 'utf8'), v).toBe(source);
    const types = sdlTypes(source);
    const sender = SENDER_FIELD.type.replace('schema.', '');
    const item = SENDER_FIELD.item;
    expect(Object.keys(types).sort()).toEqual([sender, item.type].sort());
    expect(types[sender]).toEqual({ [item.list]: `[${item.type}!]!` });
    // One slot per field type, each a basic type Flow takes, and the name that conditions test.
    expect([...item.slots]).toEqual([...FIELD_TYPES]);
    expect(types[item.type]).toEqual({
      name: 'String!',
      text: 'String',
      number: 'Float',
      boolean: 'Boolean',
      email: 'String',
      url: 'String',
      datetime: 'String',
    });
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

      it('declares the reference field, the text fields, the sender list and the body fields of the contract, in order', () => {
        const fields = toml.settings.fields;
        const refs = fields.filter((f) => f.type.endsWith('_reference'));
        const texts = fields.filter((f) => f.type === 'single_line_text_field');
        const custom = fields.filter((f) => f.type.startsWith('schema.'));
        expect(refs.length + texts.length + custom.length).toBe(fields.length);
        expect(refs.map((f) => f.type)).toEqual(def.reference ? [def.reference.type] : []);
        for (const r of refs) expect(r.key).toBeUndefined();
        expect(texts.map((f) => f.key)).toEqual([...def.textFields, BODY_FIELDS.json, BODY_FIELDS.cut]);
        expect(custom.map((f) => [f.type, f.key])).toEqual([[SENDER_FIELD.type, SENDER_FIELD.key]]);
        // As Shopify CLI takes them: keys of letters and spaces, a trigger's field types, and a schema for schema types.
        for (const f of fields) {
          if (f.key !== undefined) expect(f.key).toMatch(/^[a-zA-Z\s]*$/);
          if (!f.type.startsWith('schema.')) expect([...TRIGGER_FIELD_TYPES, ...TRIGGER_REFERENCES]).toContain(f.type);
        }
        expect(toml.extensions[0]!.schema).toBe(SENDER_FIELD.schema);
        expect(texts.map((f) => f.key)).toEqual(expect.arrayContaining([...COMMON_FIELDS]));
        for (const f of texts) {
          expect(f.key).toMatch(/^[A-Za-z]+( [A-Za-z]+)*$/);
          expect(f.description?.length ?? 0).toBeGreaterThan(0);
        }
      });

      it('matches the payload buildFlowPayload sends, key for key', () => {
        const declared = toml.settings.fields.map((f) => (f.type.endsWith('_reference') ? REFERENCE_KEYS[f.type]! : f.key!));
        const payload = buildFlowPayload({ triggerVariant: variant, sourceLabel: 'Zapier' }, mappedEvent(variant));
        expect(Object.keys(payload).sort()).toEqual([...declared].sort());
        for (const f of toml.settings.fields) {
          if (f.type === 'single_line_text_field') expect(typeof payload[f.key!]).toBe('string');
          else if (f.type === SENDER_FIELD.type) expect(payload[f.key!]).toEqual({ [SENDER_FIELD.item.list]: [] });
          else expect(payload[REFERENCE_KEYS[f.type]!]).toBe(4501);
        }
        expect(payload['hookrelay event id']).toBe('evt_01jz0000000000000000000000');
        expect(payload['received at']).toBe('2026-06-17T12:00:00.000Z');
        if (def.requires === 'relatedResourceIdPath') expect(payload['related resource id']).toBe('gid://shopify/InventoryItem/77');
      });
    });
  }
});
