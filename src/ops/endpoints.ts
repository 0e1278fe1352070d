/** Endpoints: creation (secret shown once) and reads (secret as last four only). */
import type { EndpointStore } from '../../db/repo.ts';
import type { EndpointRow } from '../../db/types.ts';
import { AppError, refuse } from '../contract/errors.ts';
import { EDITION } from '../contract/scopes.ts';
import type { OperationInput } from '../contract/operations.ts';
import type { AuthMode, Endpoint, SenderProfile } from '../contract/schemas.ts';
import { durationText, parseDuration } from '../contract/durations.ts';
import { TRIGGERS } from '../contract/triggers.ts';
import { iso } from '../lib/clock.ts';
import { fieldsOf } from '../lib/fields.ts';
import { last4, newEndpointSecret } from '../lib/crypto.ts';
import { REDACTED_WARNING, redactInput } from '../lib/redact.ts';
import { heldSecrets } from '../held-secrets.ts';
import type { OpContext } from './context.ts';

const DEFAULT_HEADERS: Record<AuthMode, string> = {
  hmac_sha256: 'X-Hookrelay-Signature',
  static_header: 'X-Hookrelay-Token',
};

/** Sender presets: no-code senders cannot digest raw bytes, so they get a static header. */
const PROFILE_AUTH: Record<SenderProfile, AuthMode> = {
  custom_http: 'hmac_sha256',
  zapier: 'static_header',
  make: 'static_header',
  n8n: 'static_header',
};

/** Rules 1-3 of the spec: explicit auth fields win; else the profile's preset; else HMAC-SHA256. */
function resolveAuth(input: { senderProfile?: SenderProfile; authMode?: AuthMode; headerName?: string }) {
  const mode: AuthMode = input.authMode ?? (input.senderProfile ? PROFILE_AUTH[input.senderProfile] : 'hmac_sha256');
  const warnings: string[] = [];
  if (mode === 'hmac_sha256' && input.senderProfile && PROFILE_AUTH[input.senderProfile] === 'static_header') {
    warnings.push(`HMAC-SHA256 was chosen explicitly for ${input.senderProfile}, which may not sign the exact raw bytes; prefer static_header.`);
  }
  return { mode, headerName: input.headerName ?? DEFAULT_HEADERS[mode], warnings };
}

export function endpointUrl(publicUrl: string, id: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/hooks/${id}`;
}

/** The configuration recorded with each config version: the view without identity and timestamps. */
export function configSnapshot(view: Endpoint) {
  const { id: _id, url: _url, createdAt: _c, updatedAt: _u, ...config } = view;
  return config;
}

export function endpointView(row: EndpointRow, publicUrl: string): Endpoint {
  return {
    id: row.id,
    url: endpointUrl(publicUrl, row.id),
    name: row.name,
    status: row.status as Endpoint['status'],
    triggerVariant: row.triggerVariant as Endpoint['triggerVariant'],
    resourceIdPath: row.resourceIdPath,
    relatedResourceIdPath: row.relatedResourceIdPath,
    requiredPaths: JSON.parse(row.requiredPaths) as string[],
    fields: fieldsOf(row),
    includeBody: row.includeBody === 1,
    senderProfile: row.senderProfile as Endpoint['senderProfile'],
    auth: { mode: row.authMode as AuthMode, headerName: row.headerName, secretLast4: row.secretLast4 },
    sourceLabel: row.sourceLabel,
    eventType: row.eventType,
    expectedEvery: row.expectedEveryMs == null ? null : durationText(row.expectedEveryMs),
    configVersion: row.configVersion,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/** The mapping a variant needs, checked before anything is stored. */
export function checkMapping(variant: keyof typeof TRIGGERS, resourceIdPath: string | null | undefined, relatedResourceIdPath: string | null | undefined) {
  const need = TRIGGERS[variant].requires;
  if (need === 'resourceIdPath' && !resourceIdPath) {
    throw new AppError('invalid_input', `triggerVariant ${variant} needs resourceIdPath (where the ${variant} id is in the event).`, [
      { path: 'resourceIdPath', code: 'required', message: 'Required for this trigger variant' },
    ]);
  }
  if (need === 'relatedResourceIdPath' && !relatedResourceIdPath) {
    throw new AppError('invalid_input', `triggerVariant ${variant} needs relatedResourceIdPath.`, [
      { path: 'relatedResourceIdPath', code: 'required', message: 'Required for this trigger variant' },
    ]);
  }
}

/** An endpoint's free text: kept and shown as redactInput leaves it, on creation as on edit. */
export const ENDPOINT_FREE_TEXT = ['name', 'sourceLabel', 'eventType'] as const;

/** Creates an endpoint from the input as redactInput leaves it: a secret pasted into a name is never stored or echoed. */
export async function createEndpoint(ctx: OpContext<EndpointStore>, { body: raw }: OperationInput<'createEndpoint'>) {
  const { core } = ctx;
  const { input: body, redacted } = redactInput(raw, ENDPOINT_FREE_TEXT, heldSecrets(core, [ctx.store]));
  if (body.platformKey !== undefined && body.platformKey !== EDITION.platformKey) {
    throw refuse({
      category: 'edition',
      code: 'platform_outside_edition',
      reason: `This edition (${EDITION.name}) hands events to ${EDITION.platformKey} only, not to ${body.platformKey}.`,
      recommendedAction: 'Record the demand with POST /agent/v1/expansion-requests (kind platform); nothing is promised.',
    });
  }
  checkMapping(body.triggerVariant, body.resourceIdPath, body.relatedResourceIdPath);
  const auth = resolveAuth(body);
  const secret = newEndpointSecret();
  const now = core.clock.now();
  const row: EndpointRow = {
    id: core.ids.next('ep'),
    storeId: ctx.store.id,
    name: body.name ?? `${body.triggerVariant} events`,
    status: 'active',
    triggerVariant: body.triggerVariant,
    resourceIdPath: body.resourceIdPath ?? null,
    relatedResourceIdPath: body.relatedResourceIdPath ?? null,
    requiredPaths: JSON.stringify(body.requiredPaths ?? []),
    fields: JSON.stringify(body.fields ?? []),
    includeBody: body.includeBody ? 1 : 0,
    senderProfile: body.senderProfile ?? null,
    authMode: auth.mode,
    headerName: auth.headerName,
    secretSealed: core.box.seal(secret),
    secretLast4: last4(secret),
    previousSecretSealed: null,
    previousSecretExpiresAt: null,
    sourceLabel: body.sourceLabel ?? body.senderProfile ?? 'custom',
    eventType: body.eventType ?? null,
    expectedEveryMs: body.expectedEvery == null ? null : parseDuration(body.expectedEvery),
    configVersion: 1,
    createdAt: now,
    updatedAt: now,
  };
  const endpoint = endpointView(row, core.config.publicUrl);
  await core.repo.insertEndpoint(row, configSnapshot(endpoint));
  const instructions =
    auth.mode === 'hmac_sha256'
      ? `Send ${auth.headerName}: lowercase hex HMAC-SHA256 of the exact raw request body, keyed with the secret. Do not re-serialise the body after signing.`
      : `Send ${auth.headerName}: the secret, exactly.`;
  const warnings = redacted ? [REDACTED_WARNING, ...auth.warnings] : auth.warnings;
  return { endpoint, secret, signing: { headerName: auth.headerName, instructions }, warnings };
}

export async function getEndpointDetail(ctx: OpContext<EndpointStore>, { params }: OperationInput<'getEndpointDetail'>) {
  const row = await ctx.core.repo.getEndpoint(ctx.store.id, params.endpointId);
  if (!row) throw new AppError('not_found', 'No such endpoint.');
  return { endpoint: endpointView(row, ctx.core.config.publicUrl) };
}
