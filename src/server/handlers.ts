/** operationId -> handler, for every operation the pipeline runs: a contract operation without one fails the typecheck. */
import type { HandledOperationId, OperationInput, OperationOutput } from '../contract/operations.ts';
import type { OpContext } from '../ops/context.ts';
import { createEndpoint, getEndpointDetail } from '../ops/endpoints.ts';
import { getEventDetail, getLatestEventResult, listEvents } from '../ops/events.ts';
import { getCurrentAgentGrant } from '../ops/grants.ts';
import { listAuditEntries } from '../ops/audit.ts';
import { endpointDeleteIntent, endpointEditIntent, secretRotationIntent } from '../ops/endpoint-intents.ts';
import { intentHandler } from '../ops/intents.ts';
import { bulkReplayIntent } from '../ops/bulk-replay.ts';
import { replayIntent } from '../ops/replay.ts';
import { createEndpointTestIntent, createExpansionRequest, createFeatureRequest, diagnosticsShareIntent, supportRequestIntent } from '../ops/requests.ts';
import { getBillingHandoff, getDestinationReliabilityHealth, getPlanUsage, getSetupState, getTenantReliabilityHealth } from '../ops/state.ts';

type Handlers = { [K in HandledOperationId]: (ctx: OpContext, input: OperationInput<K>) => Promise<OperationOutput<K>> };

export const HANDLERS: Handlers = {
  getCurrentAgentGrant,
  listAuditEntries,
  createEndpoint,
  getEndpointDetail,
  listEvents,
  getEventDetail,
  getLatestEventResult,
  getSetupState,
  getPlanUsage,
  getBillingHandoff,
  getTenantReliabilityHealth,
  getDestinationReliabilityHealth,
  createReplayIntent: intentHandler('createReplayIntent', replayIntent),
  createBulkReplayIntent: intentHandler('createBulkReplayIntent', bulkReplayIntent),
  createEndpointEditIntent: intentHandler('createEndpointEditIntent', endpointEditIntent),
  createEndpointDeleteIntent: intentHandler('createEndpointDeleteIntent', endpointDeleteIntent),
  createSecretRotationIntent: intentHandler('createSecretRotationIntent', secretRotationIntent),
  createDiagnosticsShareIntent: intentHandler('createDiagnosticsShareIntent', diagnosticsShareIntent),
  createSupportRequestIntent: intentHandler('createSupportRequestIntent', supportRequestIntent),
  createEndpointTestIntent,
  createExpansionRequest,
  createFeatureRequest,
};
