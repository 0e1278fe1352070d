/**
 * A page's one way to act: `SeatContext.call`, a contract operation through `invoke` with the human as principal
 * (src/ops/grants.ts humanPrincipal: actor kind `human`, no grant, the merchant's scopes) — the same steps as an
 * agent's call (scopes, validation, rate limits, idempotency, meters, audit), no second authority.
 */
import { AppError } from '../contract/errors.ts';
import { operations, type Operation } from '../contract/operations.ts';
import { EDITION } from '../contract/scopes.ts';
import { humanPrincipal, type Principal } from '../ops/grants.ts';
import type { Face, Human, SeatAnswer, SeatCall, SeatContext } from './types.ts';

/** What the seat hands invoke (src/server/pipeline.ts Call, the fields the seat sets). */
export interface SeatInvokeCall {
  principal: Principal;
  params: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  expected: Headers;
  idempotencyKey: string | null;
  requestId: string;
  client: () => string | null;
  surface: Face;
}

/** The app's `invoke` as the seat sees it (the seat does not import src/server: it receives invoke, as MCP does). */
export type SeatInvoke = (op: Operation, call: SeatInvokeCall) => Promise<{ status: number; body: Record<string, unknown>; replayed?: boolean }>;

const BY_ID = operations as unknown as Partial<Record<string, Operation>>;

/** `ctx.call` for `human`: one request id for every call a page makes, and the client address for the limits. */
export function seatCall(invoke: SeatInvoke, human: Human, requestId: string, client: () => string | null): SeatContext['call'] {
  const principal = humanPrincipal(human.store, human.actor);
  const expected = new Headers();
  return async (c: SeatCall): Promise<SeatAnswer> => {
    const op = Object.hasOwn(BY_ID, c.operationId) ? BY_ID[c.operationId] : undefined;
    if (!op) return notFound(c.operationId, requestId);
    const answer = await invoke(op, {
      principal,
      params: c.params ?? {},
      query: c.query,
      body: c.body,
      expected,
      idempotencyKey: c.idempotencyKey ?? null,
      requestId,
      client,
      surface: human.face,
    });
    return { status: answer.status, body: answer.body, ...(answer.replayed ? { replayed: true } : {}) };
  };
}

/** A page naming no operation of the contract: a bug of the page, answered as the contract's 404. */
function notFound(operationId: string, requestId: string): SeatAnswer {
  const err = new AppError('not_found', `No operation ${operationId} in the contract.`);
  return {
    status: 404,
    body: { edition: EDITION, scope: null, actor: null, refusal: null, error: { code: err.code, message: err.message, requestId } },
  };
}
