/**
 * The app folder as the Shopify CLI itself takes it: the locked @shopify/cli (package.json, 4.8.2) loads
 * shopify/ with its own loader and extension specifications, offline, the step `shopify app build`/`deploy` run
 * before anything reaches Shopify. Its flow_trigger specification parses each trigger TOML with its zod schema
 * (keys of letters and spaces; field types boolean, email, single_line_text_field, url, number_decimal,
 * `schema.<Type>` and the references; a `schema` file required by a `schema.` field) and serializes it as it is
 * deployed; its flow_template specification checks name, description (≤ 1,024), categories and module, and reads
 * the .flow file; flow_action checks runtime_url. `shopify app doctor` checks none of this (it scans 0 files).
 * The loader is the CLI's private bundle (no public API): the test finds it by its signature and says so when a
 * CLI upgrade moves it. The lifecycle callback (flow_trigger_lifecycle_callback) is a spec the CLI fetches from
 * Shopify, not in the bundle: it is skipped here, as the CLI does offline.
 */
import { afterAll, describe, expect, it } from 'bun:test';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FLOW_TEMPLATES } from '../../src/contract/templates.ts';
import { ALERT_TRIGGER, CONFIRM_ACTION, SENDER_FIELD, TRIGGERS } from '../../src/contract/triggers.ts';

const ROOT = join(import.meta.dir, '../..');
const DIST = join(ROOT, 'node_modules/@shopify/cli/dist');
const SENDER_SOURCE = join(ROOT, 'shopify/_shared/sender.graphql');

const work = mkdtempSync(join(tmpdir(), 'hookrelay-shopify-cli-'));
// The CLI keeps a small config file; keep it out of the home directory.
process.env.XDG_CONFIG_HOME = join(work, 'config');
process.env.SHOPIFY_CLI_NO_ANALYTICS = '1';
afterAll(() => rmSync(work, { recursive: true, force: true }));

type Extension = { handle: string; specification: { identifier: string }; deployConfig: (o: object) => Promise<any> };
type LoadApp = (o: { directory: string; skipPrompts: boolean }) => Promise<{ app: { allExtensions: Extension[]; configuration: object } }>;

/** The CLI's "load the app in this folder" function (it throws the first validation error), found in its bundle. */
async function cliLoader(): Promise<LoadApp> {
  const signature = /async function ([\w$]+)\(\{directory:e,userProvidedConfigName:t,skipPrompts:r=!1\}\)\{let\{project:n,activeConfig:o\}/;
  for (const file of readdirSync(DIST).filter((f) => f.endsWith('.js'))) {
    const text = readFileSync(join(DIST, file), 'utf8');
    const fn = text.match(signature)?.[1];
    if (!fn || !text.includes('identifier:"flow_template"')) continue;
    const alias = text.match(new RegExp(`[{,]${fn.replace('$', '\\$')} as ([\\w$]+)[,}]`))?.[1];
    if (alias) return (await import(join(DIST, file)))[alias] as LoadApp;
  }
  throw new Error('the Shopify CLI bundle no longer has its app loader where this test looks: update cliLoader()');
}

/** A copy of shopify/ (the loader writes .shopify/ into the folder it loads), changed by `edit` when given. */
function copyApp(name: string, edit?: (dir: string) => void): string {
  const dir = join(work, name);
  cpSync(join(ROOT, 'shopify'), dir, { recursive: true });
  edit?.(dir);
  return dir;
}

const load = await cliLoader();

describe('the Shopify CLI (locked version) takes the app folder', async () => {
  const { app } = await load({ directory: copyApp('as-is'), skipPrompts: true });
  const byHandle = new Map(app.allExtensions.map((e) => [e.handle, e]));
  const deployed = (handle: string) => byHandle.get(handle)!.deployConfig({ apiKey: 'test', appConfiguration: app.configuration });

  it('loads every trigger, the confirm action and every template with the type the folder declares', () => {
    const want = [
      ...Object.values(TRIGGERS).map((t) => [t.handle, 'flow_trigger']),
      [ALERT_TRIGGER.handle, 'flow_trigger'],
      [CONFIRM_ACTION.handle, 'flow_action'],
      ...FLOW_TEMPLATES.map((t) => [t.handle, 'flow_template']),
    ];
    for (const [handle, type] of want) expect(byHandle.get(handle!)?.specification.identifier, handle).toBe(type!);
  });

  it("deploys each endpoint trigger's sender field as a reference to the Sender type, with the shared schema file", async () => {
    const schema = readFileSync(SENDER_SOURCE, 'utf8');
    for (const t of Object.values(TRIGGERS)) {
      const config = await deployed(t.handle);
      const sender = config.fields.find((f: { name: string }) => f.name === SENDER_FIELD.key);
      expect(sender, t.handle).toMatchObject({ uiType: 'schema-type-reference', typeRefName: 'Sender' });
      expect(config.schema_patch, t.handle).toBe(schema);
    }
  });

  it('ships each template with its .flow file as the definition', async () => {
    for (const t of FLOW_TEMPLATES) {
      const config = await deployed(t.handle);
      const file = readFileSync(join(ROOT, 'shopify/extensions', t.dir, 'template.flow'));
      expect(config).toMatchObject({ template_handle: t.handle, name: t.name, require_app: true });
      expect(config.definition).toBe(file.toString('base64'));
    }
  });

  it('refuses what Shopify would refuse: a key with an underscore, a schema type without a schema file, a bad category', async () => {
    const trigger = (dir: string) => join(dir, 'extensions/order/shopify.extension.toml');
    const template = (dir: string) => join(dir, 'extensions', FLOW_TEMPLATES[0]!.dir, 'shopify.extension.toml');
    const edits: [string, (dir: string) => void, RegExp][] = [
      [
        'bad-key',
        (d) => writeFileSync(trigger(d), readFileSync(trigger(d), 'utf8').replace('key = "body json"', 'key = "body_json"')),
        /alphabetic characters and spaces/,
      ],
      ['no-schema', (d) => writeFileSync(trigger(d), readFileSync(trigger(d), 'utf8').replace(/^schema = .*$/m, '')), /`schema` must be specified/],
      ['bad-category', (d) => writeFileSync(template(d), readFileSync(template(d), 'utf8').replace('"orders"', '"order"')), /not a valid category/],
    ];
    for (const [name, edit, message] of edits) {
      await expect(load({ directory: copyApp(name, edit), skipPrompts: true }), name).rejects.toThrow(message);
    }
  });
});
