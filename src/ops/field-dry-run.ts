/**
 * The edit preview's dry run of an endpoint's typed fields: over the store's last events with a retained body, how
 * often each field is found, missing or of another type. Counts only: no value, no body, leaves this function.
 */
import type { EventReads, HandoffQueue } from '../../db/repo.ts';
import { ENDPOINT_FIELDS } from '../contract/limits.ts';
import type { EndpointField } from '../contract/schemas/endpoints.ts';
import { parsedBody, readFields } from '../lib/fields.ts';
import type { OpContext } from './context.ts';

export interface FieldDryRun {
  /** How many events were read (at most ENDPOINT_FIELDS.dryRunEvents). */
  events: number;
  fields: { name: string; found: number; missing: number; wrongType: number }[];
}

/** Events listed per page while looking for retained bodies; at most this many pages are read. */
const PAGE = 100;
const MAX_PAGES = 10;

/** The store's newest events whose body is still retained, newest first, up to `want`, as parsed JSON. */
async function retainedBodies(ctx: OpContext<EventReads & Pick<HandoffQueue, 'getEventBody'>>, want: number): Promise<unknown[]> {
  const out: unknown[] = [];
  let beforeId: string | undefined;
  for (let page = 0; page < MAX_PAGES && out.length < want; page++) {
    const events = await ctx.core.repo.listEvents({ storeId: ctx.store.id, beforeId, limit: PAGE });
    for (const e of events) {
      if (out.length >= want) break;
      if (e.bodyRetention !== 'retained') continue;
      // Accepted bodies are JSON; anything else is not an event the fields could read.
      const doc = parsedBody(await ctx.core.repo.getEventBody(e.id));
      if (doc !== undefined) out.push(doc);
    }
    if (events.length < PAGE) break;
    beforeId = events.at(-1)!.id;
  }
  return out;
}

/** Reads `fields` against the store's last retained bodies and returns the counts per field. */
export async function fieldDryRun(ctx: OpContext<EventReads & Pick<HandoffQueue, 'getEventBody'>>, fields: readonly EndpointField[]): Promise<FieldDryRun> {
  const docs = await retainedBodies(ctx, ENDPOINT_FIELDS.dryRunEvents);
  const counts = fields.map((f) => ({ name: f.name, found: 0, missing: 0, wrongType: 0 }));
  for (const doc of docs) {
    const r = readFields(fields, doc);
    for (const c of counts) {
      if (r.missing.includes(c.name)) c.missing++;
      else if (r.wrongType.includes(c.name)) c.wrongType++;
      else c.found++;
    }
  }
  return { events: docs.length, fields: counts };
}
