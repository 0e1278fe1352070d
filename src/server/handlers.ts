/** operationId -> handler. An operation without an entry is declared but not served (manifest: available false). */
import type { OperationId, OperationInput, OperationOutput } from '../contract/operations.ts';
import type { OpContext } from '../ops/context.ts';
import { createEndpoint, getEndpointDetail } from '../ops/endpoints.ts';
import { getEventDetail, getLatestEventResult, listEvents } from '../ops/events.ts';
import { getCurrentAgentGrant } from '../ops/grants.ts';

type Handlers = { [K in OperationId]?: (ctx: OpContext, input: OperationInput<K>) => Promise<OperationOutput<K>> };

export const HANDLERS: Handlers = {
  getCurrentAgentGrant,
  createEndpoint,
  getEndpointDetail,
  listEvents,
  getEventDetail,
  getLatestEventResult,
};
