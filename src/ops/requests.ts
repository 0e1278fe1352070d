/** Handoff-only test intents, diagnostics shares, support requests and non-binding expansion/feature requests. */
import { insertRecord } from '../../db/areas/records.ts';
import type { EndpointStore, EventReads, RecordStore, UsageStore } from '../../db/repo.ts';
import { AppError } from '../contract/errors.ts';
import type { OperationInput } from '../contract/operations.ts';
import { WINDOW_MS, type Window } from '../contract/schemas.ts';
import { TEST_EVENT_PREFIX } from '../contract/triggers.ts';
import { iso } from '../lib/clock.ts';
import { randomBase62 } from '../lib/ids.ts';
import { redactDocument, redactText } from '../lib/redact.ts';
import type { OpContext } from './context.ts';
import { endpointUrl } from './endpoints.ts';
import { eventSummary } from './events.ts';
import { stalePreview, type IntentKind } from './intents.ts';
import { heldSecrets } from '../held-secrets.ts';
import { notifyOperator, operatorSees } from './operator-notify.ts';
import { ensureCapacity } from './usage.ts';

export async function createEndpointTestIntent(ctx: OpContext<EndpointStore>, { params, body }: OperationInput<'createEndpointTestIntent'>) {
  const ep = await ctx.core.repo.getEndpoint(ctx.store.id, params.endpointId);
  if (!ep) throw new AppError('not_found', 'No such endpoint.');
  if (ep.status !== 'active') {
    const reason = 'The endpoint is archived; it takes no events.';
    throw new AppError('conflict', reason, undefined, {
      category: 'target_state',
      code: 'endpoint_archived',
      reason,
      recommendedAction: 'Test an active endpoint, or create a new one.',
    });
  }
  const payload = { event_type: body.eventType ?? 'hookrelay.test', external_event_id: `${TEST_EVENT_PREFIX}${randomBase62(12)}` };
  const bodyText = JSON.stringify(payload);
  const hmac = ep.authMode === 'hmac_sha256';
  return {
    test: {
      endpointId: ep.id,
      url: endpointUrl(ctx.core.config.publicUrl, ep.id),
      method: 'POST' as const,
      contentType: 'application/json' as const,
      headerName: ep.headerName,
      authMode: ep.authMode as 'hmac_sha256' | 'static_header',
      body: payload,
      bodyText,
      howToSign: hmac
        ? `Compute the lowercase hex HMAC-SHA256 of exactly these bytes with the endpoint secret (ending ${ep.secretLast4}) and send it in ${ep.headerName}, e.g. printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET". Do not re-serialise the body.`
        : `Send the endpoint secret (ending ${ep.secretLast4}) exactly as the value of ${ep.headerName}.`,
      expectedReceipt: "202 with status 'test': authentication passed; the event is not handed off. Setup state then shows a test receipt.",
    },
  };
}

type DiagInput = { eventIds?: string[]; endpointIds?: string[]; window?: Window; note?: string; expiresInHours?: number };

/** The frozen package: receipt facts, endpoint state, codes, retention, recovery guidance. No bodies, secrets, headers or customer data. */
type DiagnosticsPackage = Awaited<ReturnType<typeof diagnosticsPackage>>;

async function diagnosticsPackage(ctx: OpContext<EventReads & EndpointStore>, input: DiagInput) {
  const { core, store } = ctx;
  const now = core.clock.now();
  const events = [];
  for (const id of input.eventIds ?? []) {
    const e = await core.repo.getEvent(store.id, id);
    if (!e) throw new AppError('not_found', `No such event ${id}.`);
    const s = eventSummary(e, now, core.config.bodyRetentionMs);
    const attempts = (await core.repo.listAttempts(e.id)).map((a) => ({ number: a.number, outcome: a.outcome, httpStatus: a.httpStatus, code: a.code }));
    events.push({
      id: s.id,
      endpointId: s.endpointId,
      outcome: s.outcome,
      code: s.code,
      eventType: s.eventType,
      receivedAt: s.receivedAt,
      bodyRetention: s.bodyRetention,
      replayable: s.replayable,
      attempts,
    });
  }
  const endpointIds = input.endpointIds ?? [...new Set(events.map((e) => e.endpointId))];
  const endpoints = [];
  for (const id of endpointIds) {
    const ep = await core.repo.getEndpoint(store.id, id);
    if (!ep) throw new AppError('not_found', `No such endpoint ${id}.`);
    const failures = await core.repo.listAuthFailures(store.id, id, 20);
    endpoints.push({
      id: ep.id,
      status: ep.status,
      triggerVariant: ep.triggerVariant,
      authMode: ep.authMode,
      headerName: ep.headerName,
      configVersion: ep.configVersion,
      recentAuthFailureCodes: failures.map((f) => f.code),
    });
  }
  const window = input.window ?? '24h';
  const since = now - WINDOW_MS[window];
  return {
    generatedAt: iso(now),
    window,
    shop: store.shopDomain,
    events,
    endpoints,
    authFailures: (await core.repo.countAuthFailures(store.id, since)).map((r) => ({ endpointId: r.endpointId, count: r.n })),
    guidance: [
      'Auth failures are never replayable: fix the sender and send a fresh event.',
      'Replay retained events that ended failed or no_workflow after fixing the cause.',
      '`delivered` means handed to Shopify Flow, not that downstream work completed.',
    ],
    redaction: 'No event bodies, secrets, header values, tokens or customer data are included.',
  };
}

/** Input reaches these kinds already redacted (intents.ts): the note and summary they show are what is kept. */
/**
 * A diagnostics share is bound to its preview by holding it: the package the preview was built from is its basis
 * and is what execute freezes, so what is shared is what was shown (a busy store's package changes by the second).
 */
export const diagnosticsShareIntent: IntentKind<DiagInput, EventReads & EndpointStore & UsageStore & RecordStore, { package: DiagnosticsPackage }> = {
  kind: 'diagnostics_share',
  freeText: ['note'],
  async preview(ctx, input) {
    await ensureCapacity(ctx.core, ctx.store, 'diagnostics_shares');
    const pkg = await diagnosticsPackage(ctx, input);
    return {
      targetId: null,
      basis: { package: pkg },
      preview: {
        summary: `Share a redacted diagnostics package: ${pkg.events.length} events, ${pkg.endpoints.length} endpoints, window ${pkg.window}.`,
        changes: [
          {
            field: 'diagnosticsShare',
            from: null,
            to: {
              events: pkg.events.map((e) => e.id),
              endpoints: pkg.endpoints.map((e) => e.id),
              note: input.note ?? null,
              expiresInHours: input.expiresInHours ?? 72,
            },
          },
        ],
        sideEffects: [
          'The package shown by this preview is what is shared, as it was at the preview, readable by the operator of this hookrelay server (hookrelay requests show) until it expires.',
        ],
        meterCost: [
          { meter: 'diagnostics_shares', units: 1 },
          { meter: 'executed_actions', units: 1 },
        ],
        warnings: [],
      },
    };
  },
  async plan(ctx, _intent, input, basis) {
    if (!basis) throw stalePreview('this preview was made before packages were kept with their preview');
    await ensureCapacity(ctx.core, ctx.store, 'diagnostics_shares');
    const now = ctx.core.clock.now();
    const id = ctx.core.ids.next('diag');
    const expiresAt = now + (input.expiresInHours ?? 72) * 3600_000;
    const body = JSON.stringify({ ...basis.package, note: input.note ?? null });
    return {
      writes: [insertRecord({ id, storeId: ctx.store.id, kind: 'diagnostics_share', body, createdAt: now, expiresAt })],
      meters: ['diagnostics_shares'],
      result: () => ({ summary: `Diagnostics share ${id} is frozen until ${iso(expiresAt)}.`, resourceId: id }),
    };
  },
};

type SupportInput = { category: string; urgency: string; summary: string; eventIds?: string[]; endpointIds?: string[]; diagnosticsShareId?: string };

export const supportRequestIntent: IntentKind<SupportInput, EventReads & EndpointStore & RecordStore> = {
  kind: 'support_request',
  freeText: ['summary'],
  async preview(ctx, input) {
    for (const id of input.eventIds ?? []) if (!(await ctx.core.repo.getEvent(ctx.store.id, id))) throw new AppError('not_found', `No such event ${id}.`);
    for (const id of input.endpointIds ?? [])
      if (!(await ctx.core.repo.getEndpoint(ctx.store.id, id))) throw new AppError('not_found', `No such endpoint ${id}.`);
    if (input.diagnosticsShareId && !(await ctx.core.repo.getRecord(ctx.store.id, 'diagnostics_share', input.diagnosticsShareId))) {
      throw new AppError('not_found', 'No such diagnostics share.');
    }
    return {
      targetId: null,
      preview: {
        summary: `Send a ${input.urgency} ${input.category} support request.`,
        changes: [
          {
            field: 'supportRequest',
            from: null,
            to: {
              category: input.category,
              urgency: input.urgency,
              summary: input.summary,
              eventIds: input.eventIds ?? [],
              endpointIds: input.endpointIds ?? [],
              diagnosticsShareId: input.diagnosticsShareId ?? null,
            },
          },
        ],
        sideEffects: [operatorSees(ctx.core, 'the redacted summary, the linked ids and the shop domain')],
        meterCost: [{ meter: 'executed_actions', units: 1 }],
        warnings: [],
      },
    };
  },
  async plan(ctx, _intent, input) {
    const now = ctx.core.clock.now();
    const id = ctx.core.ids.next('sup');
    const body = {
      category: input.category,
      urgency: input.urgency,
      summary: input.summary,
      links: { eventIds: input.eventIds ?? [], endpointIds: input.endpointIds ?? [], diagnosticsShareId: input.diagnosticsShareId ?? null },
      statusHistory: [{ status: 'submitted', at: iso(now) }],
      consent: true,
    };
    return {
      writes: [insertRecord({ id, storeId: ctx.store.id, kind: 'support_request', body: JSON.stringify(body), createdAt: now, expiresAt: null })],
      result: () => ({ summary: `Support request ${id} submitted.`, resourceId: id }),
      // Once committed: the operator's notification, in the background (src/ops/operator-notify.ts).
      after: () =>
        notifyOperator(ctx.core, ctx.store.shopDomain, {
          id,
          storeId: ctx.store.id,
          kind: 'support_request',
          body: JSON.stringify(body),
          createdAt: now,
          expiresAt: null,
        }),
    };
  },
};

const ACK = 'Received. This is a non-binding signal: it implies no commitment, priority or timeline.';

export async function createExpansionRequest(ctx: OpContext<RecordStore>, { body }: OperationInput<'createExpansionRequest'>) {
  return nonBinding(ctx, 'expansion', body);
}

export async function createFeatureRequest(ctx: OpContext<RecordStore>, { body }: OperationInput<'createFeatureRequest'>) {
  return nonBinding(ctx, 'feature', body);
}

/** Stores the request with every string redacted as free text (they are written for support to read). */
async function nonBinding(ctx: OpContext<RecordStore>, kind: 'expansion' | 'feature', raw: unknown) {
  const held = heldSecrets(ctx.core, [ctx.store]);
  const text = (s: string) => redactText(s, held);
  const body = redactDocument(raw, { text, secretField: text });
  const now = ctx.core.clock.now();
  const id = ctx.core.ids.next(kind === 'expansion' ? 'exp' : 'feat');
  const row = { id, storeId: ctx.store.id, kind: `${kind}_request`, body: JSON.stringify(body), createdAt: now, expiresAt: null };
  await ctx.core.repo.insertRecord(row);
  notifyOperator(ctx.core, ctx.store.shopDomain, row);
  return { request: { id, kind, status: 'received' as const, createdAt: iso(now) }, acknowledgement: ACK, nonBinding: true as const };
}
