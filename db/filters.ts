/** The events list's filter, once for both dialects: each passes its own events table's columns. */
import { and, eq, gte, lt, type Column, type SQL } from 'drizzle-orm';
import type { EventFilter } from './types.ts';

export function eventFilterWhere(
  f: EventFilter,
  c: { storeId: Column; endpointId: Column; outcome: Column; receivedAt: Column; id: Column },
): SQL | undefined {
  const where: SQL[] = [eq(c.storeId, f.storeId)];
  if (f.endpointId) where.push(eq(c.endpointId, f.endpointId));
  if (f.outcome) where.push(eq(c.outcome, f.outcome));
  if (f.since != null) where.push(gte(c.receivedAt, f.since));
  if (f.until != null) where.push(lt(c.receivedAt, f.until));
  if (f.beforeId) where.push(lt(c.id, f.beforeId));
  if (f.sinceId) where.push(gte(c.id, f.sinceId));
  return and(...where);
}
