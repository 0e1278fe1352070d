/**
 * POST /hooks/{endpointId}: size and type checks, raw bytes read once, authentication over those exact bytes,
 * validation and mapping, then a durable receipt before the 202. Does not use the agent-API pipeline.
 */
import type { CommittedReceipt, EventRow } from '../../db/types.ts';
import { AppError } from '../contract/errors.ts';
import { AUTH_FAILURE_LIMITS } from '../contract/limits.ts';
import { TEST_EVENT_PREFIX, TRIGGERS } from '../contract/triggers.ts';
import type { Runtime } from '../core.ts';
import { acceptedCapacity } from '../contract/plans.ts';
import { constantTimeEqual, verifyHmacHex } from '../lib/crypto.ts';
import type { EndpointCache, LiveEndpoint } from './endpoint-cache.ts';
import { platformOf } from '../platform/registry.ts';
import { getPath } from '../lib/fields.ts';
import { relatedIdText } from './mapping.ts';
import { readCapped, releaseBody } from '../lib/body.ts';
import { metrics } from '../lib/instruments.ts';
import { describeFault, outcomeUnknown, STORAGE_RETRY_AFTER_SECONDS, storageFault } from './storage-health.ts';
import { WriterClosedError, type ReceiptWriter } from './writer.ts';
import { NO_CLIENT, type AuthFailureLimiter, type ClientOf } from '../lib/auth-failures.ts';
import { diagnosisFor, type DiagnosisCode } from '../contract/diagnoses.ts';
import { diagnoseFailure } from './signature-forensics.ts';

const JSON_TYPE = /^application\/json\s*(;|$)/i;
/** Stateless without `stream`, so one instance serves every request. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });
const MAX_TEXT = 255;

export interface InboundDeps {
  /** The inbound path stores through the writer only. */
  core: Runtime;
  endpoints: EndpointCache;
  writer: ReceiptWriter;
  /** Failed authentications per client address and per endpoint: 429 past either limit. */
  authFailures: AuthFailureLimiter;
}

function reply(status: number, body: Record<string, unknown>, headers?: Record<string, string>): Response {
  metrics.inboundReply(status);
  return Response.json(body, { status, headers });
}

const MESSAGES = {
  SVC_AUTH_HEADER_MISSING: 'The authentication header configured for this endpoint is missing. Fix the sender and send a fresh event.',
  SVC_AUTH_FAILED: 'Authentication failed: the signature or static token did not verify. Fix the sender and send a fresh event.',
  SVC_INVALID_JSON: 'The body is not valid UTF-8 JSON.',
  SVC_REQUIRED_PATH_MISSING: 'A path this endpoint requires is missing from the event.',
  SVC_RESOURCE_ID_UNMAPPABLE: 'The mapped resource id is missing or is not a numeric id or GID.',
  SVC_PAYLOAD_TOO_LARGE: 'The event is larger than this endpoint accepts.',
} as const;

/** SVC_AUTH_FAILED's message when the authentication header arrived with several values. */
const SEVERAL_VALUES = 'Authentication failed: the authentication header carries several values. Send it once, with one value.';

export function createInboundHandler({ core, endpoints, writer, authFailures }: InboundDeps) {
  const { clock, ids, config } = core;

  /**
   * `client`: the caller's address key (see clientKey), null when unknown. receive's own promise with its failures
   * answered, not an async frame around it (one promise fewer per receipt).
   */
  return function handleInbound(req: Request, endpointId: string, client: ClientOf = NO_CLIENT): Promise<Response> {
    return receive(req, endpointId, client).catch(unavailable);
  };

  /**
   * The answer when storage cannot take the receipt: a 503 the sender retries, with a stable code and no driver
   * text. The writer has recorded (and logged, once) the fault; a receipt refused because the server is stopping
   * is no error at all. Anything else is a bug, for serve's top-level handler.
   */
  function unavailable(err: unknown): Response {
    if (err instanceof WriterClosedError) {
      return reply(
        503,
        { code: 'shutting_down', message: 'The server is stopping; nothing was recorded. Retry shortly.' },
        { 'Retry-After': '5', Connection: 'close' },
      );
    }
    // A secret that does not open with this box's key (src/lib/crypto.ts): the operator's to fix, never a 500.
    if (err instanceof AppError && err.code === 'secret_key_mismatch') return reply(err.status, { code: err.code, message: err.message });
    const fault = storageFault(err);
    if (!fault) throw err;
    return reply(
      503,
      { code: 'storage_unavailable', message: `The receipt could not be recorded: ${describeFault(fault)}. Retry later.` },
      { 'Retry-After': String(STORAGE_RETRY_AFTER_SECONDS) },
    );
  }

  /**
   * The 503 of a receipt whose COMMIT reached the database and whose answer was lost, the database unreachable
   * since: it may be stored. The answer names it, so that the sender's retry (same external_event_id) is answered
   * duplicate_suppressed instead of making a second event, or the sender can look the event up.
   */
  function mayBeRecorded(event: EventRow): Response {
    const retry = event.externalEventId
      ? 'Send it again with the same external_event_id: if it was recorded, the retry is answered duplicate_suppressed.'
      : `Without an external_event_id a retry would be a second event if this one was recorded: GET /agent/v1/events/${event.id} tells.`;
    return reply(
      503,
      {
        code: 'storage_unavailable',
        message: `The database stopped answering while this receipt was being committed: it may have been recorded as ${event.id}. ${retry}`,
        receiptId: event.receiptId,
        eventId: event.id,
      },
      { 'Retry-After': String(STORAGE_RETRY_AFTER_SECONDS) },
    );
  }

  async function receive(req: Request, endpointId: string, client: ClientOf): Promise<Response> {
    if (req.method !== 'POST') return reply(405, { code: 'method_not_allowed', message: 'Use POST.' }, { Allow: 'POST' });
    const ep = endpoints.cached(endpointId) ?? (await endpoints.get(endpointId));
    if (ep?.row.status !== 'active') return reply(404, { code: 'not_found', message: 'No such endpoint.' });

    if (!JSON_TYPE.test(req.headers.get('content-type') ?? '')) {
      return reply(415, { code: 'unsupported_media_type', message: 'Send Content-Type: application/json.' });
    }
    let body: Uint8Array | null;
    try {
      body = await readCapped(req, config.maxBodyBytes);
    } catch (err) {
      // The body's deadline (408) or the bound on bodies read at once (503), in the inbound shape; a hang-up is serve's.
      if (err instanceof AppError) return reply(err.status, { code: err.code, message: err.message }, err.headers);
      throw err;
    }
    if (!body) return tooLarge();
    try {
      return await verified(req, ep, body, client);
    } finally {
      // Stored (a copy) or refused by now: its bytes need not wait for the garbage collector.
      releaseBody(body);
    }
  }

  /** Not async: its answers are authFailure's or accept's promises as they are (receive awaits it inside its try). */
  function verified(req: Request, ep: LiveEndpoint, body: Uint8Array, client: ClientOf): Promise<Response> {
    const now = clock.now();
    const headerValue = req.headers.get(ep.row.headerName);
    if (!headerValue) {
      const missing = `The ${ep.row.headerName} header this endpoint authenticates with is missing. Fix the sender and send a fresh event.`;
      return authFailure(ep, 'SVC_AUTH_HEADER_MISSING', now, client, missing);
    }
    // Repeated header lines reach us joined with ", " (standard header names, proxies, Bun 1.4+); no signature or
    // secret holds a comma. Refused outright: a proxy reading the first value would see another one than we do.
    if (headerValue.includes(',')) return authFailure(ep, 'SVC_AUTH_FAILED', now, client, SEVERAL_VALUES, { body, headerValue });
    if (!authenticate(ep, body, headerValue, now)) return authFailure(ep, 'SVC_AUTH_FAILED', now, client, MESSAGES.SVC_AUTH_FAILED, { body, headerValue });

    return accept(ep, body, now);
  }

  function tooLarge(): Response {
    return reply(413, { code: 'SVC_PAYLOAD_TOO_LARGE', message: `Bodies are limited to ${config.maxBodyBytes} bytes.` });
  }

  /**
   * Records the failure (folded into a count under a flood) and answers 401, or 429 once the client address or the
   * endpoint is over its failure limit. Only failures reach here: a correctly signed event is never refused by it.
   * With `evidence` (the header value and body of a failed check), a 401 is examined for the sender's usual mistakes
   * (signature-forensics.ts): the answer carries the diagnosis and its fix, the record its code only. A 429 is not
   * examined (past the limits a failure costs no HMAC beyond its check) and carries no diagnosis; the row it folds into
   * keeps its finding.
   */
  async function authFailure(
    ep: LiveEndpoint,
    code: 'SVC_AUTH_HEADER_MISSING' | 'SVC_AUTH_FAILED',
    at: number,
    client: ClientOf,
    message: string = MESSAGES[code],
    evidence?: { body: Uint8Array; headerValue: string },
  ) {
    const { windowMs, rowsPerEndpoint } = AUTH_FAILURE_LIMITS;
    const d = await authFailures.fail(client(), ep.row.id);
    const foldSince = Math.floor(at / windowMs) * windowMs;
    // Past the limits a failure is not examined (undefined): its fold keeps the row's finding (PendingAuthFailure).
    const diagnosis: DiagnosisCode | null | undefined = !evidence ? null : d.limited ? undefined : diagnoseFailure(ep, evidence.body, evidence.headerValue, at);
    await writer.recordAuthFailure({
      id: ids.next('af'),
      storeId: ep.row.storeId,
      endpointId: ep.row.id,
      code,
      at,
      count: 1,
      foldSince,
      keepRows: rowsPerEndpoint,
      diagnosis,
    });
    metrics.inboundAuthFailure(ep.row.storeId, code);
    if (!d.limited) return reply(401, diagnosis ? { code, message, diagnosis: diagnosisFor(diagnosis, ep.row.senderProfile) } : { code, message });
    const whose = d.scope === 'client' ? 'from this address' : 'for this endpoint';
    return reply(
      429,
      {
        code: 'rate_limited',
        message: `Too many failed authentications ${whose}; fix the sender's secret or signature and retry after ${d.retryAfterSeconds} s.`,
        retryAfterSeconds: d.retryAfterSeconds,
      },
      { 'Retry-After': String(d.retryAfterSeconds) },
    );
  }

  async function accept(ep: LiveEndpoint, body: Uint8Array, now: number): Promise<Response> {
    const row = ep.row;
    const eventId = ids.next('evt');
    const event: EventRow = {
      id: eventId,
      receiptId: ids.next('rcpt'),
      storeId: row.storeId,
      endpointId: row.id,
      configVersion: row.configVersion,
      outcome: 'accepted',
      code: null,
      externalEventId: null,
      eventType: row.eventType,
      isTest: false,
      duplicateOf: null,
      resourceId: null,
      relatedResourceId: null,
      bodyBytes: body.byteLength,
      bodyRetention: 'retained',
      receivedAt: now,
      attempts: 0,
      lastAttemptAt: null,
      nextAttemptAt: now,
      leaseUntil: null,
      deliveredAt: null,
    };

    const rejectedCode = interpret(ep, body, event);
    if (event.isTest) {
      Object.assign(event, { outcome: 'test', code: null, nextAttemptAt: null, bodyRetention: 'none' });
    } else if (rejectedCode) {
      Object.assign(event, { outcome: 'rejected', code: rejectedCode, nextAttemptAt: null, bodyRetention: 'none' });
    }

    const keep = event.outcome === 'accepted';
    let committed: CommittedReceipt;
    try {
      committed = await writer.submit({
        event,
        body: keep ? body : null,
        bodyExpiresAt: now + config.bodyRetentionMs,
        dedupeSince: keep ? now - config.dedupeWindowMs : null,
        capacity: keep ? acceptedCapacity(ep.store, now) : null,
      });
    } catch (err) {
      metrics.inbound(row.storeId, 'unavailable');
      if (outcomeUnknown(err)) return mayBeRecorded(event);
      throw err; // answered by unavailable()
    }
    metrics.inbound(row.storeId, committed.outcome);
    const out: Record<string, unknown> = { receiptId: committed.receiptId, eventId: committed.eventId, status: committed.outcome };
    if (committed.duplicateOf) out.duplicateOf = committed.duplicateOf;
    if (rejectedCode && !event.isTest) return reply(422, { code: rejectedCode, message: MESSAGES[rejectedCode], ...out });
    return reply(202, out);
  }

  /** Parses and maps the body into `event`; returns the rejection code when the event cannot be handed off. */
  function interpret(ep: LiveEndpoint, body: Uint8Array, event: EventRow) {
    let doc: unknown;
    try {
      doc = JSON.parse(UTF8.decode(body));
    } catch {
      return 'SVC_INVALID_JSON' as const;
    }
    const eventType = textField(getPath(doc, 'event_type'));
    if (eventType) event.eventType = eventType;
    event.externalEventId = textField(getPath(doc, 'external_event_id'));
    // A test event (from an endpoint test intent) proves authentication; it skips mapping and is never handed off.
    if (event.externalEventId?.startsWith(TEST_EVENT_PREFIX)) {
      event.isTest = true;
      return null;
    }

    for (const path of ep.requiredPaths) {
      const v = getPath(doc, path);
      if (v === undefined || v === null) return 'SVC_REQUIRED_PATH_MISSING' as const;
    }
    const row = ep.row;
    const platform = platformOf(ep.store.destination);
    const variant = TRIGGERS[row.triggerVariant as keyof typeof TRIGGERS];
    if (variant.requires === 'resourceIdPath') {
      event.resourceId = row.resourceIdPath ? platform.resourceId(getPath(doc, row.resourceIdPath)) : null;
      if (!event.resourceId) return 'SVC_RESOURCE_ID_UNMAPPABLE' as const;
    } else if (row.resourceIdPath) {
      event.resourceId = platform.resourceId(getPath(doc, row.resourceIdPath));
    }
    if (row.relatedResourceIdPath) event.relatedResourceId = relatedIdText(getPath(doc, row.relatedResourceIdPath));
    if (variant.requires === 'relatedResourceIdPath' && !event.relatedResourceId) return 'SVC_RESOURCE_ID_UNMAPPABLE' as const;

    // The payload itself is built once, at send (Platform.handoff); here only whether it could ever be handed off.
    return platform.refusal(row, event);
  }
}

function authenticate(ep: LiveEndpoint, body: Uint8Array, headerValue: string, now: number): boolean {
  const hmac = ep.row.authMode === 'hmac_sha256';
  const ok = hmac ? verifyHmacHex(ep.secret, body, headerValue) : constantTimeEqual(ep.secret, headerValue);
  // The previous secret (during its grace) is checked too, whatever the first answered, so that timing does not
  // reveal which secret matched; no array of candidates per receipt.
  const previous = ep.previousSecret && (ep.previousSecretExpiresAt ?? 0) > now ? ep.previousSecret : null;
  if (previous === null) return ok;
  const match = hmac ? verifyHmacHex(previous, body, headerValue) : constantTimeEqual(previous, headerValue);
  return ok || match;
}

function textField(v: unknown): string | null {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v !== 'string' || v.length === 0) return null;
  return v.length > MAX_TEXT ? v.slice(0, MAX_TEXT) : v;
}
