/**
 * An event's typed fields: the values an endpoint's `fields` name, read at their dot paths and kept only when of
 * their declared type. One rule for the handoff (the trigger's `sender.fields`), the edit preview's dry run (counts
 * only) and the counts an attempt records. Free of zod and of any platform.
 */
import type { EndpointField } from '../contract/schemas/endpoints.ts';
import type { FieldType } from '../contract/triggers.ts';
import { ENDPOINT_FIELDS } from '../contract/limits.ts';

/** Value at a dot path (`order.id`, `line_items.0.sku`); undefined when any step is missing. */
export function getPath(root: unknown, path: string): unknown {
  let cur: unknown = root;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (Array.isArray(cur)) {
      if (!/^\d+$/.test(key)) return undefined;
      cur = cur[Number(key)];
    } else {
      if (!Object.hasOwn(cur, key)) return undefined;
      cur = (cur as Record<string, unknown>)[key];
    }
  }
  return cur;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** RFC 3339 date-time: a date, `T`, a time, and `Z` or an offset. */
const DATETIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const shortText = (v: unknown): v is string => typeof v === 'string' && v.length <= ENDPOINT_FIELDS.maxChars;

/** Whether a value is of a field type, as sent: no coercion ("3" is not a number, 1 is not a boolean). */
const IS: Record<FieldType, (v: unknown) => boolean> = {
  text: shortText,
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  boolean: (v) => typeof v === 'boolean',
  email: (v) => shortText(v) && EMAIL.test(v),
  url: (v) => shortText(v) && URL.canParse(v) && /^https?:$/.test(new URL(v).protocol),
  datetime: (v) => shortText(v) && DATETIME.test(v) && !Number.isNaN(Date.parse(v)),
};

export type FieldValue = { name: string; type: FieldType; value: string | number | boolean };

/** What an event's body gave for the endpoint's fields: the typed values, and the names missing or of another type. */
export interface FieldReading {
  values: FieldValue[];
  missing: string[];
  wrongType: string[];
}

/** Reads the fields from a parsed body (`undefined` when none is retained: every field is then missing). */
export function readFields(fields: readonly EndpointField[], doc: unknown): FieldReading {
  const out: FieldReading = { values: [], missing: [], wrongType: [] };
  for (const f of fields) {
    const v = doc === undefined ? undefined : getPath(doc, f.path);
    if (v === undefined || v === null) out.missing.push(f.name);
    else if (!IS[f.type](v)) out.wrongType.push(f.name);
    else out.values.push({ name: f.name, type: f.type, value: v as string | number | boolean });
  }
  return out;
}

/** A stored body as the fields read it: its JSON, or undefined when none is left or it is not JSON. */
export function parsedBody(bytes: Uint8Array | null): unknown {
  if (!bytes) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

/** An endpoint row's fields, as stored (JSON). */
export function fieldsOf(row: { fields: string }): EndpointField[] {
  return JSON.parse(row.fields) as EndpointField[];
}
