import { describe, expect, it } from 'bun:test';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FLOW_TEMPLATES } from '../../src/contract/templates.ts';
import { SENDER_FIELD } from '../../src/contract/triggers.ts';

const EXT_DIR = join(import.meta.dir, '../../shopify/extensions');

/**
 * What Shopify documents for a flow_template extension, copied so the test needs no network:
 * shopify.dev/docs/apps/build/flow/templates/reference and the Shopify CLI's flow_template specification
 * (@shopify/cli 4.8.2, which shopify-cli.test.ts runs on this folder): name, type, handle and description (at
 * most 1,024 characters) in [[extensions]]; in [extensions.template] categories (from the list below), module (the .flow file, shipped with the extension),
 * and the optional booleans require_app, discoverable, allow_one_click_activate and enabled.
 */
const CATEGORIES = [
  'buyer_experience',
  'customers',
  'fulfillment',
  'inventory_and_merch',
  'loyalty',
  'orders',
  'promotion',
  'risk',
  'b2b',
  'payment_reminders',
  'custom_data',
  'error_monitoring',
];
const TEMPLATE_KEYS = ['categories', 'module', 'require_app', 'discoverable', 'allow_one_click_activate', 'enabled'];

/**
 * The template file is a workflow as Flow's editor exports it (shopify.dev/docs/apps/build/flow/templates/
 * create-a-template, step 1: "export the workflow and save the .flow file"; the CLI's flow_template spec ships the
 * file's bytes as they are). An exported file is `<sha256 hex of the JSON>:<the JSON, compact>`: checked on a
 * public export (a workflow shared with its prefix 2977b26c…3116, whose JSON hashes to exactly that) and on
 * exports in public help articles. The JSON: `__metadata.version` 0.1; `root` with steps, links, patched_fields,
 * variables, note, vertical_layout_enabled, workflow_name; a step's step_id (a UUID), step_position, task_id,
 * task_version, task_type, config_field_values, description, note, name; links from a port to a step's `input`:
 * `output` for triggers and actions, `true`/`false` for conditions (also Shopify-AI-Toolkit skills/shopify-flow
 * "building workflows"). A condition's value is, in exports, a JSON tree (LogicalExpression, Comparison,
 * ArrayExpression `ANY` over `array_path` binding `array_item_key`), each node with a uuid and its parent's.
 * An app's task is `<app>::<extension handle>`: NOT verified (no public export of an app's task was found).
 */
interface Step {
  step_id: string;
  step_position: [number, number];
  task_id: string;
  task_version: string;
  task_type: 'TRIGGER' | 'CONDITION' | 'ACTION';
  config_field_values: { config_field_id: string; value: string }[];
  description: string | null;
  note: string | null;
  name: string | null;
}
interface Workflow {
  __metadata: { version: number };
  root: {
    workflow_name: string;
    steps: Step[];
    links: { from_step_id: string; from_port_id: string; to_step_id: string; to_port_id: string }[];
    patched_fields: unknown[];
    variables: unknown[];
    note: string | null;
    vertical_layout_enabled: boolean;
  };
}
const ROOT_KEYS = ['links', 'note', 'patched_fields', 'steps', 'variables', 'vertical_layout_enabled', 'workflow_name'];
const STEP_KEYS = ['config_field_values', 'description', 'name', 'note', 'step_id', 'step_position', 'task_id', 'task_type', 'task_version'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A .flow file's JSON, after checking its prefix is the SHA-256 of the JSON as written. */
function readFlow(text: string): Workflow {
  const colon = text.indexOf(':');
  const json = text.slice(colon + 1);
  // To re-seal after an edit: bun -e 'const j=JSON.stringify(JSON.parse(require("fs").readFileSync(0,"utf8").replace(/^[0-9a-f]{64}:/,"")));process.stdout.write(new Bun.CryptoHasher("sha256").update(j).digest("hex")+":"+j)' < f > g
  expect(text.slice(0, colon), 'the sha256 prefix of the JSON').toBe(new Bun.CryptoHasher('sha256').update(json).digest('hex'));
  return JSON.parse(json) as Workflow;
}

/** A node of a condition's tree, as exported. */
interface CondNode {
  uuid: string;
  parent_uuid?: string;
  operation_type?: 'LogicalExpression' | 'Comparison' | 'ArrayExpression';
  operator?: string;
  lhs?: CondNode;
  rhs?: CondNode;
  array_path?: CondNode;
  array_item_key?: CondNode;
  operation?: CondNode;
  value?: string;
  value_type?: string;
  comparison_value_type?: 'EnvironmentValue' | 'LiteralValue';
  full_environment_path?: string;
}

/**
 * A condition tree in the condition language of the Toolkit's "workflow runtime" (`(a == 'x') && (l any? |i| …)`),
 * checking on the way that each node names its parent's uuid; the comparisons found go to `comparisons`.
 */
function conditionText(node: CondNode, comparisons: CondNode[], parent?: string): string {
  expect(node.uuid).toBeString();
  if (parent) expect(node.parent_uuid).toBe(parent);
  const sub = (n: CondNode | undefined) => (n ? conditionText(n, comparisons, node.uuid) : undefined);
  if (node.operation_type === 'LogicalExpression') {
    expect(['AND', 'OR']).toContain(node.operator!);
    const parts = [sub(node.lhs), sub(node.rhs)].filter((p) => p !== undefined);
    return `(${parts.join(node.operator === 'AND' ? ' && ' : ' || ')})`;
  }
  if (node.operation_type === 'ArrayExpression') {
    expect(node.operator).toBe('ANY');
    return `(${sub(node.array_path)} any? |${sub(node.array_item_key)}| ${sub(node.operation)})`;
  }
  if (node.operation_type === 'Comparison') {
    comparisons.push(node);
    expect(node.lhs!.full_environment_path).toBe(node.lhs!.value);
    return `(${sub(node.lhs)} ${node.operator} '${sub(node.rhs)}')`;
  }
  expect(['EnvironmentValue', 'LiteralValue']).toContain(node.comparison_value_type!);
  return node.value!;
}

/**
 * The config fields of the Shopify tasks the templates use. NOT from Shopify's documentation (Flow's
 * task-configuration is read from a store); the best public evidence found: add_order_tags as the Toolkit's worked
 * examples configure the tag actions (`<resource>_id` wrapped as {"value","default_value"}, tags a JSON list);
 * send_email as a public app's generated export writes it (address, subject, message).
 */
const SHOPIFY_TASK_FIELDS: Record<string, readonly string[]> = {
  'shopify::flow::condition': ['condition'],
  'shopify::admin::add_order_tags': ['order_id', 'tags'],
  'shopify::flow::send_email': ['address', 'subject', 'message'],
};

type Field = { type: string; key?: string; required?: boolean };
type Extension = { dir: string; ext: Record<string, any>; fields: Field[] };

/** Every extension the app ships, by handle. */
const shipped = new Map<string, Extension>(
  readdirSync(EXT_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => {
      const toml = Bun.TOML.parse(readFileSync(join(EXT_DIR, d.name, 'shopify.extension.toml'), 'utf8')) as any;
      return [toml.extensions[0].handle, { dir: d.name, ext: toml.extensions[0], fields: toml.settings?.fields ?? [] }];
    }),
);

const REFERENCE_VARIABLES: Record<string, string> = { order_reference: 'order', customer_reference: 'customer', product_reference: 'product' };
/** A trigger field's key as a workflow variable: Flow camel-cases it (`hookrelay event id` → hookrelayEventId). */
const variableOf = (f: Field) => REFERENCE_VARIABLES[f.type] ?? f.key!.replace(/ (\w)/g, (_, c: string) => c.toUpperCase());

const SHOPIFY = ' shopify object';
const SCALAR = ' scalar';

/** The custom types of a trigger's schema file: `{ Type: { field: 'Type!' } }`. */
function sdlTypes(dir: string): Record<string, Record<string, string>> {
  const sdl = readFileSync(join(EXT_DIR, dir, SENDER_FIELD.schema), 'utf8')
    .replace(/#.*$/gm, '')
    .replace(/"""[\s\S]*?"""/g, '')
    .replace(/"[^"\n]*"/g, '');
  const out: Record<string, Record<string, string>> = {};
  for (const m of sdl.matchAll(/type\s+(\w+)\s*\{([^}]*)\}/g)) {
    out[m[1]!] = Object.fromEntries([...m[2]!.matchAll(/(\w+)\s*:\s*([\w![\]]+)/g)].map((f) => [f[1]!, f[2]!]));
  }
  return out;
}

/**
 * Every variable path a condition or a Liquid value reads, checked against the trigger's fields: a root that is a
 * trigger field (or `shop`, which every workflow has), then each step through its custom type (a Shopify object's
 * own fields are the Admin API's, not checked here); `any?` binds an item of a list. Returns the paths that do not
 * exist.
 */
function unknownPaths(trigger: Extension, texts: string[]): string[] {
  const types = trigger.ext.schema ? sdlTypes(trigger.dir) : {};
  // What a variable is: a custom type of the schema file, a scalar, or a Shopify object (its fields are the Admin API's).
  const kindOf = (f: Field) => (f.type.startsWith('schema.') ? f.type.slice(7) : f.type in REFERENCE_VARIABLES ? SHOPIFY : SCALAR);
  const roots = new Map<string, string>(trigger.fields.map((f) => [variableOf(f), kindOf(f)]));
  roots.set('shop', SHOPIFY);
  /** The kind at the end of `steps` from `kind`, or undefined when a step does not exist. */
  const walk = (kind: string, steps: string[]): string | undefined => {
    let k = kind;
    for (const step of steps) {
      if (k === SHOPIFY) return SHOPIFY;
      const field = types[k]?.[step];
      if (!field) return undefined;
      const named = field.replace(/[[\]!]/g, '');
      k = named in types ? named : SCALAR;
    }
    return k;
  };
  const bad: string[] = [];
  for (const text of texts) {
    const code = text.replace(/'[^']*'/g, "''");
    const items = new Map<string, string>();
    for (const m of code.matchAll(/([A-Za-z_][\w.]*)\s+any\?\s*\|(\w+)\|/g)) {
      const [root, ...steps] = m[1]!.split('.');
      const kind = roots.has(root!) ? walk(roots.get(root!)!, steps) : undefined;
      if (kind !== undefined) items.set(m[2]!, kind);
    }
    const exprs = text.includes('{{') ? [...text.matchAll(/\{\{\s*([^}|]+?)\s*(\|[^}]*)?\}\}/g)].map((m) => m[1]!) : [code];
    for (const expr of exprs) {
      for (const m of expr.replace(/'[^']*'/g, "''").matchAll(/(?<![\w'|])([A-Za-z_]\w*(?:\.\w+)*)(?![\w|?])/g)) {
        const [root, ...steps] = m[1]!.split('.');
        if (['true', 'false', 'nil'].includes(root!)) continue;
        const base = items.get(root!) ?? roots.get(root!);
        if (base === undefined || walk(base, steps) === undefined) bad.push(m[1]!);
      }
    }
  }
  return bad;
}

describe('workflow templates', () => {
  for (const t of FLOW_TEMPLATES) {
    describe(t.name, () => {
      const dir = join(EXT_DIR, t.dir);
      const toml = Bun.TOML.parse(readFileSync(join(dir, 'shopify.extension.toml'), 'utf8')) as { extensions: Record<string, any>[] };
      const ext = toml.extensions[0]!;

      it('is a flow_template extension as Shopify CLI takes it, matching the contract', () => {
        expect(toml.extensions).toHaveLength(1);
        expect(ext).toMatchObject({ type: 'flow_template', handle: t.handle, name: t.name, description: t.description });
        expect(t.handle.length).toBeLessThanOrEqual(30);
        expect(t.handle).toMatch(/^[a-z0-9-]+$/);
        expect(t.description.length).toBeLessThanOrEqual(1024);
        for (const k of Object.keys(ext.template)) expect(TEMPLATE_KEYS).toContain(k);
        expect(ext.template.categories.length).toBeGreaterThan(0);
        for (const c of ext.template.categories) expect(CATEGORIES).toContain(c);
        expect(ext.template.module).toMatch(/^\.\/[\w-]+\.flow$/);
        expect(existsSync(join(dir, ext.template.module))).toBe(true);
        // The app's own triggers and action: a template that needs them needs the app.
        expect(ext.template.require_app).toBe(true);
      });

      const wf = readFlow(readFileSync(join(dir, 'template.flow'), 'utf8'));
      const steps = new Map(wf.root.steps.map((s) => [s.step_id, s]));

      it('is a workflow of steps and links that hold together', () => {
        expect(wf.__metadata).toEqual({ version: 0.1 });
        expect(wf.root.workflow_name).toBe(t.name);
        expect(Object.keys(wf.root).sort()).toEqual(ROOT_KEYS);
        for (const s of wf.root.steps) {
          expect(Object.keys(s).sort()).toEqual(STEP_KEYS);
          expect(s.step_id).toMatch(UUID);
          expect(s.task_version).toBe('0.1');
        }
        expect(steps.size).toBe(wf.root.steps.length);
        expect(wf.root.steps.filter((s) => s.task_type === 'TRIGGER')).toHaveLength(1);
        expect(wf.root.steps.some((s) => s.task_type === 'ACTION')).toBe(true);
        for (const l of wf.root.links) {
          const from = steps.get(l.from_step_id);
          expect(from, `link from ${l.from_step_id}`).toBeDefined();
          expect(steps.get(l.to_step_id), `link to ${l.to_step_id}`).toBeDefined();
          expect(l.to_port_id).toBe('input');
          expect(from!.task_type === 'CONDITION' ? ['true', 'false'] : ['output']).toContain(l.from_port_id);
        }
        // Every step but the trigger is reached.
        const reached = new Set(wf.root.links.map((l) => l.to_step_id));
        for (const s of wf.root.steps) if (s.task_type !== 'TRIGGER') expect(reached.has(s.step_id), `step ${s.step_id}`).toBe(true);
      });

      it('starts from its hookrelay trigger and uses only handles, fields and variables that exist', () => {
        const trigger = wf.root.steps.find((s) => s.task_type === 'TRIGGER')!;
        expect(trigger.task_id).toBe(`hookrelay::${t.trigger}`);
        for (const s of wf.root.steps.filter((x) => x.task_id.startsWith('hookrelay::'))) {
          const used = shipped.get(s.task_id.slice('hookrelay::'.length));
          expect(used, s.task_id).toBeDefined();
          expect(used!.ext.type).toBe(s.task_type === 'TRIGGER' ? 'flow_trigger' : 'flow_action');
          if (s.task_type === 'ACTION') {
            const keys = used!.fields.map((f) => f.key);
            for (const v of s.config_field_values) expect(keys, `${s.task_id} field`).toContain(v.config_field_id);
            for (const f of used!.fields.filter((x) => x.required)) expect(s.config_field_values.map((v) => v.config_field_id)).toContain(f.key!);
          }
        }
        expect(t.action === null || wf.root.steps.some((s) => s.task_id === `hookrelay::${t.action}`)).toBe(true);
        for (const s of wf.root.steps.filter((x) => x.task_id in SHOPIFY_TASK_FIELDS)) {
          expect(s.config_field_values.map((v) => v.config_field_id).sort(), s.task_id).toEqual([...SHOPIFY_TASK_FIELDS[s.task_id]!].sort());
        }
        const comparisons: CondNode[] = [];
        const texts = wf.root.steps.flatMap((s) =>
          s.task_type === 'CONDITION'
            ? s.config_field_values.map((v) => conditionText(JSON.parse(v.value) as CondNode, comparisons))
            : s.config_field_values.map((v) => v.value).filter((v) => v.includes('{{')),
        );
        expect(texts.length).toBeGreaterThan(0);
        const starts = shipped.get(t.trigger)!;
        expect(unknownPaths(starts, texts)).toEqual([]);
        // Each comparison is typed as its variable is: a trigger's text field is a String; an item of sender.fields
        // has the types of SenderField in the schema file (number is a Float).
        const item = starts.ext.schema ? sdlTypes(starts.dir)[SENDER_FIELD.item.type]! : {};
        for (const c of comparisons) {
          const [, member] = c.lhs!.value!.split('.');
          const scalar = member ? item[member]?.replace('!', '') : 'String';
          expect(c.value_type, c.lhs!.value).toBe(`EnvironmentScalarDefinition:${scalar}`);
        }
      });
    });
  }

  it('checks what it says: a misspelt field, an unknown type member or an unknown handle is caught', () => {
    const order = shipped.get('hookrelay-order')!;
    expect(unknownPaths(order, ["(sender.fields any? |f| ((f.name == 'score') && (f.numbr < 3)))"])).toEqual(['f.numbr']);
    expect(unknownPaths(order, ['{{ hookrelayEvntId }}', '{{ order.id }}', '{{ sender.feilds }}', '{{ source.id }}'])).toEqual([
      'hookrelayEvntId',
      'sender.feilds',
      'source.id',
    ]);
    expect(unknownPaths(shipped.get('hookrelay-alert')!, ['{{ recommendedAction }} {{ summary }}', "(kind == 'silence')"])).toEqual([]);
    expect(shipped.get('hookrelay-ordr')).toBeUndefined();
    // A file whose JSON changed without its prefix, and a condition node that names another parent, are refused.
    const text = readFileSync(join(EXT_DIR, FLOW_TEMPLATES[0]!.dir, 'template.flow'), 'utf8');
    expect(() => readFlow(text.replace('hookrelay-low-score', 'hookrelay-low-scor'))).toThrow();
    const comparison = {
      uuid: 'c',
      parent_uuid: 'x',
      operation_type: 'Comparison',
      operator: '==',
      lhs: { uuid: 'l', parent_uuid: 'c', value: 'kind', full_environment_path: 'kind', comparison_value_type: 'EnvironmentValue' },
      rhs: { uuid: 'r', parent_uuid: 'c', value: 'silence', comparison_value_type: 'LiteralValue' },
    } as const;
    expect(conditionText(comparison, [])).toBe("(kind == 'silence')");
    expect(() => conditionText({ uuid: 'root', operation_type: 'LogicalExpression', operator: 'AND', lhs: comparison }, [])).toThrow();
  });
});
