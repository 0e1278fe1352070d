/** Endpoint edit, delete (archive, then permanent) and secret rotation, as intents. */
import { archiveEndpoint, deleteArchivedEndpoint, editEndpoint, rotateSecret } from '../../db/areas/endpoints.ts';
import type { EndpointStore, EventReads, HandoffQueue } from '../../db/repo.ts';
import type { EndpointRow } from '../../db/types.ts';
import { AppError, refuse } from '../contract/errors.ts';
import { durationText, parseDuration } from '../contract/durations.ts';
import { last4, newEndpointSecret, sha256Hex } from '../lib/crypto.ts';
import { fieldsOf } from '../lib/fields.ts';
import type { OpContext } from './context.ts';
import { checkMapping, configSnapshot, ENDPOINT_FREE_TEXT, endpointView } from './endpoints.ts';
import { fieldDryRun } from './field-dry-run.ts';
import type { EndpointField } from '../contract/schemas/endpoints.ts';
import { stalePreview, type IntentKind } from './intents.ts';

const EDITABLE = [
  'name',
  'triggerVariant',
  'resourceIdPath',
  'relatedResourceIdPath',
  'requiredPaths',
  'fields',
  'includeBody',
  'sourceLabel',
  'eventType',
  'headerName',
  'expectedEvery',
] as const;
type EditInput = Partial<Record<(typeof EDITABLE)[number], unknown>>;

async function endpointOf(ctx: OpContext<EndpointStore>, id: string) {
  const row = await ctx.core.repo.getEndpoint(ctx.store.id, id);
  if (!row) throw new AppError('not_found', 'No such endpoint.');
  return row;
}

function current(row: EndpointRow): Record<string, unknown> {
  return {
    name: row.name,
    triggerVariant: row.triggerVariant,
    resourceIdPath: row.resourceIdPath,
    relatedResourceIdPath: row.relatedResourceIdPath,
    requiredPaths: JSON.parse(row.requiredPaths),
    fields: fieldsOf(row),
    includeBody: row.includeBody === 1,
    sourceLabel: row.sourceLabel,
    eventType: row.eventType,
    headerName: row.headerName,
    expectedEvery: row.expectedEveryMs == null ? null : durationText(row.expectedEveryMs),
  };
}

function diff(row: EndpointRow, input: EditInput) {
  const now = current(row);
  // A watch given in other units is the same watch (`120m` is `2h`): compared, and shown, as the read shows it.
  const given = typeof input.expectedEvery === 'string' ? { ...input, expectedEvery: durationText(parseDuration(input.expectedEvery)!) } : input;
  return EDITABLE.filter((k) => k in given && JSON.stringify(given[k]) !== JSON.stringify(now[k])).map((k) => ({
    field: k,
    from: now[k],
    to: given[k] ?? null,
  }));
}

function mustBeActive(row: EndpointRow) {
  if (row.status !== 'active') {
    throw refuse({
      category: 'target_state',
      code: 'endpoint_archived',
      reason: 'The endpoint is archived.',
      recommendedAction: 'Create a new endpoint, or delete this one permanently.',
    });
  }
}

export const endpointEditIntent: IntentKind<EditInput, EndpointStore & EventReads & Pick<HandoffQueue, 'getEventBody'>, { configVersion: number }> = {
  kind: 'endpoint_edit',
  // The rule creation applies to the same fields: secrets and email addresses go.
  freeText: ENDPOINT_FREE_TEXT,
  async preview(ctx, input, params) {
    const row = await endpointOf(ctx, params.endpointId!);
    mustBeActive(row);
    const merged = { ...current(row), ...input };
    checkMapping(merged.triggerVariant as never, merged.resourceIdPath as string | null, merged.relatedResourceIdPath as string | null);
    const changes = diff(row, input);
    const sideEffects = [`Creates config version ${row.configVersion + 1}; events already received keep the version they used.`];
    if (changes.some((c) => c.field === 'headerName')) sideEffects.push('Senders must send the new header name from the moment this executes.');
    const watch = changes.find((c) => c.field === 'expectedEvery');
    if (watch) {
      sideEffects.push(
        watch.to == null
          ? 'The silence watch stops: an open silence alert of this endpoint recovers at the next alert sweep (within a minute).'
          : `A silence alert is raised once the endpoint receives nothing for longer than ${watch.to as string} (from its last receipt, or from when the watch began).`,
      );
    }
    // Fields given: how they would have read the store's recent events (counts only, never a value).
    const dryRun = Array.isArray(input.fields) && input.fields.length ? await fieldDryRun(ctx, input.fields as EndpointField[]) : undefined;
    return {
      targetId: row.id,
      basis: { configVersion: row.configVersion },
      preview: {
        summary: changes.length ? `Change ${changes.map((c) => c.field).join(', ')} of ${row.id}.` : `No change to ${row.id}.`,
        changes,
        sideEffects,
        meterCost: [{ meter: 'executed_actions', units: 1 }],
        warnings: changes.length ? [] : ['Every given value equals the current one.'],
        ...(dryRun && { fieldDryRun: dryRun }),
      },
    };
  },
  async plan(ctx, intent, input, basis) {
    const row = await endpointOf(ctx, intent.targetId!);
    mustBeActive(row);
    if (row.configVersion !== basis?.configVersion) {
      throw stalePreview(`the endpoint is at config version ${row.configVersion}; the preview showed version ${basis?.configVersion ?? 'unknown'}`);
    }
    const merged = { ...current(row), ...input };
    checkMapping(merged.triggerVariant as never, merged.resourceIdPath as string | null, merged.relatedResourceIdPath as string | null);
    const next: EndpointRow = {
      ...row,
      name: merged.name as string,
      triggerVariant: merged.triggerVariant as string,
      resourceIdPath: (merged.resourceIdPath as string | null) ?? null,
      relatedResourceIdPath: (merged.relatedResourceIdPath as string | null) ?? null,
      requiredPaths: JSON.stringify(merged.requiredPaths ?? []),
      fields: JSON.stringify(merged.fields ?? []),
      includeBody: merged.includeBody ? 1 : 0,
      sourceLabel: merged.sourceLabel as string,
      eventType: (merged.eventType as string | null) ?? null,
      headerName: merged.headerName as string,
      expectedEveryMs: merged.expectedEvery == null ? null : parseDuration(merged.expectedEvery as string),
      configVersion: row.configVersion + 1,
      updatedAt: ctx.core.clock.now(),
    };
    return {
      writes: editEndpoint(next, row.configVersion, configSnapshot(endpointView(next, ctx.core.config.publicUrl))),
      result: () => ({ summary: `Endpoint ${row.id} is at config version ${next.configVersion}.`, resourceId: row.id }),
      after: () => ctx.endpointChanged(row.id),
    };
  },
};

type DeleteInput = { stage?: 'archive' | 'permanent' };

export const endpointDeleteIntent: IntentKind<DeleteInput, EndpointStore & EventReads, { status: string }> = {
  kind: 'endpoint_delete',
  async preview(ctx, input, params) {
    const row = await endpointOf(ctx, params.endpointId!);
    const stage = input.stage ?? 'archive';
    await checkStage(ctx, row, stage);
    return {
      targetId: row.id,
      basis: { status: row.status },
      preview: {
        summary:
          stage === 'archive' ? `Archive ${row.id}: it stops taking events; history stays.` : `Delete archived ${row.id} permanently; receipts stay readable.`,
        changes: [{ field: 'status', from: row.status, to: stage === 'archive' ? 'archived' : 'deleted' }],
        sideEffects:
          stage === 'archive'
            ? ['Senders posting to this URL get 404 from then on.']
            : ['The endpoint configuration and its versions are removed; this cannot be undone.'],
        meterCost: [{ meter: 'executed_actions', units: 1 }],
        warnings: [],
      },
    };
  },
  async plan(ctx, intent, input, basis) {
    const row = await endpointOf(ctx, intent.targetId!);
    const stage = input.stage ?? 'archive';
    await checkStage(ctx, row, stage);
    if (row.status !== basis?.status) throw stalePreview(`the endpoint is ${row.status}; the preview showed it ${basis?.status ?? 'in another state'}`);
    return {
      writes: stage === 'archive' ? [archiveEndpoint(ctx.store.id, row.id, ctx.core.clock.now())] : deleteArchivedEndpoint(ctx.store.id, row.id),
      result: () => ({ summary: stage === 'archive' ? `Endpoint ${row.id} is archived.` : `Endpoint ${row.id} is deleted.`, resourceId: row.id }),
      after: () => ctx.endpointChanged(row.id),
    };
  },
};

async function checkStage(ctx: OpContext<EventReads>, row: EndpointRow, stage: 'archive' | 'permanent') {
  if (stage === 'archive') return mustBeActive(row);
  if (row.status !== 'archived') {
    throw refuse({
      category: 'target_state',
      code: 'endpoint_not_archived',
      reason: 'Only an archived endpoint can be deleted permanently.',
      recommendedAction: 'Archive it first (stage archive).',
    });
  }
  // Its configuration is what hands its events off: deleting it would strand every acknowledged event still
  // waiting (accepted, queued for a handoff or retry, held for capacity).
  const { backlog } = await ctx.core.repo.pendingStats(ctx.store.id, row.id);
  if (backlog > 0) {
    throw refuse({
      category: 'target_state',
      code: 'endpoint_has_pending_events',
      reason: `${backlog} acknowledged event(s) of this endpoint are not handed off yet (accepted, queued or held).`,
      recommendedAction: 'Wait until they are delivered or end failed (list them with outcome filters), then delete it.',
    });
  }
  // The merchant (a human from the seat) may do what an admin_assistant grant may: they own the store.
  if (ctx.actor.kind !== 'human' && ctx.grant?.tier !== 'admin_assistant') {
    throw refuse({
      category: 'scope',
      code: 'admin_assistant_only',
      reason: 'Permanent delete is for Admin Assistant grants only.',
      recommendedAction: 'Ask the merchant to do it, or for an admin_assistant grant.',
    });
  }
}

type RotationInput = { overlapSeconds?: number };

/** Which secret a rotation was previewed on: a digest of its sealed value (each sealing is unique), never the secret. */
type SecretGeneration = { secret: string };

const generationOf = (row: EndpointRow): SecretGeneration => ({ secret: sha256Hex(row.secretSealed).slice(0, 16) });

export const secretRotationIntent: IntentKind<RotationInput, EndpointStore, SecretGeneration> = {
  kind: 'secret_rotation',
  recoveredNote:
    'Its answer was lost before it reached you, so the new secret was shown to no one: rotate again to get one (the previous secret works as this summary says).',
  async preview(ctx, input, params) {
    const row = await endpointOf(ctx, params.endpointId!);
    mustBeActive(row);
    const overlap = input.overlapSeconds ?? 86400;
    return {
      targetId: row.id,
      basis: generationOf(row),
      preview: {
        summary: `Rotate the secret of ${row.id} (ending ${row.secretLast4}).`,
        changes: [{ field: 'auth.secretLast4', from: row.secretLast4, to: '(new, shown once on execute)' }],
        sideEffects: [
          overlap > 0
            ? `The current secret keeps working for ${overlap} s after execution, then stops.`
            : 'The current secret stops working immediately: senders fail until they use the new one.',
          'The new secret appears once, in the execute response. Store it in the sender before the overlap ends.',
        ],
        meterCost: [{ meter: 'executed_actions', units: 1 }],
        warnings: overlap === 0 ? ['No overlap: in-flight senders will get SVC_AUTH_FAILED.'] : [],
      },
    };
  },
  async plan(ctx, intent, input, basis) {
    const row = await endpointOf(ctx, intent.targetId!);
    mustBeActive(row);
    if (generationOf(row).secret !== basis?.secret) {
      throw stalePreview(`the secret was rotated since (it now ends ${row.secretLast4}); the overlap this preview promised no longer applies to it`);
    }
    const now = ctx.core.clock.now();
    const overlapMs = (input.overlapSeconds ?? 86400) * 1000;
    const secret = newEndpointSecret();
    const next = {
      ...row,
      secretSealed: ctx.core.box.seal(secret),
      secretLast4: last4(secret),
      // Kept sealed after its overlap too (even one of 0): signature forensics names a sender still using it.
      previousSecretSealed: row.secretSealed,
      previousSecretExpiresAt: now + overlapMs,
      updatedAt: now,
    };
    return {
      writes: [rotateSecret(next, row.secretSealed)],
      secret,
      result: () => ({
        summary: `New secret for ${row.id} (ending ${last4(secret)}); the previous one ${overlapMs > 0 ? `works until ${new Date(now + overlapMs).toISOString()}` : 'no longer works'}.`,
        resourceId: row.id,
      }),
      after: () => ctx.endpointChanged(row.id),
    };
  },
};
