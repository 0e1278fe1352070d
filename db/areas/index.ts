/**
 * The storage areas that are one logic on both backends, written once over the thin runner (db/runner.ts). A
 * dialect's repo holds only what truly differs (the ingest commit, the handoff queue's leases, rate windows,
 * signals, liveness) and takes these as they are.
 */
import type { AdminStore, EventReads, HandoffQueue, IdempotencyStore, IntentStore } from '../repo.ts';
import type { SqlRunner } from '../runner.ts';
import { alertStore, type AlertStore } from './alerts.ts';
import { auditLog } from './audit.ts';
import { confirmationStore, type ConfirmationStore } from './confirmations.ts';
import { endpointStore } from './endpoints.ts';
import { eventReads } from './event-reads.ts';
import { grantStore } from './grants.ts';
import { idempotencyStore } from './idempotency.ts';
import { intentStore } from './intents.ts';
import { meterStore } from './meters.ts';
import { tenants } from './tenants.ts';

export type SharedAreas = AdminStore & EventReads & IntentStore & IdempotencyStore & Pick<HandoffQueue, 'nextDueAt'> & ConfirmationStore & AlertStore;

export function sharedAreas(sql: SqlRunner): SharedAreas {
  return {
    ...tenants(sql),
    ...grantStore(sql),
    ...endpointStore(sql),
    ...auditLog(sql),
    ...meterStore(sql),
    ...intentStore(sql),
    ...idempotencyStore(sql),
    ...eventReads(sql),
    ...confirmationStore(sql),
    ...alertStore(sql),
  };
}
