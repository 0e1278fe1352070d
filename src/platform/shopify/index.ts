/**
 * Shopify as a Platform (src/platform/types.ts): Flow triggers handed off through the Admin API, the pages of the
 * Shopify app (install, billing, webhooks, Flow's lifecycle callback and confirm action), and what setup state,
 * `store show` and serve say of a store handing off to Shopify. src/platform/registry.ts is its only importer.
 */
import type { ReadinessStore } from '../../../db/repo.ts';
import type { StoreRow } from '../../../db/types.ts';
import { AppError } from '../../contract/errors.ts';
import { CONFIRM_ACTION } from '../../contract/triggers.ts';
import type { PlatformLinkState } from '../../contract/platform-schemas.ts';
import type { Core } from '../../core.ts';
import { iso } from '../../lib/clock.ts';
import type { AppPlatform, Platform, PlatformChecks, PlatformOps, PlatformRoute } from '../types.ts';
import { APP_SECRET_ENV, appClientId, appSecret } from './app.ts';
import { billingMode } from './billing.ts';
import { createConfirmationHandler } from './confirmations.ts';
import { credentialModeOf, credentialVariable } from './credentials.ts';
import { flowHandoff, flowRefusal } from './flow.ts';
import { normalizeResourceId } from './ids.ts';
import { createLifecycleHandler } from './lifecycle.ts';
import { budgetState, credentialsState, platformLinkState } from './link-state.ts';
import { shopifyPlatform } from './platform.ts';
import { apiVersionStatus } from './version.ts';
import { WEBHOOK_PATH } from './webhooks.ts';

type Env = (name: string) => string | undefined;

/** The lifecycle checklist item's text (the log destination shows it too: Flow's readiness is the same). */
const LIFECYCLE_CHECK = `Flow's lifecycle callback can be verified (${APP_SECRET_ENV[0]} is set on the server); without it Flow cannot enable workflows on hookrelay's triggers.`;

/** Trigger readiness as Flow's lifecycle callback recorded it: a trigger never reported on is handed off. */
async function withoutWorkflow(repo: Pick<ReadinessStore, 'readinessOfStores'>, storeIds: readonly string[]): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  for (const r of await repo.readinessOfStores(storeIds)) {
    if (r.hasEnabledFlow) continue;
    const handles = out.get(r.storeId);
    if (handles) handles.add(r.handle);
    else out.set(r.storeId, new Set([r.handle]));
  }
  return out;
}

/** The shopify destination needs the credentials its mode reads. */
function checkStore(row: Pick<StoreRow, 'credentialMode' | 'adminTokenEnv' | 'clientId' | 'clientSecretEnv'>): void {
  const mode = credentialModeOf(row);
  if (mode === 'client-credentials') {
    if (!row.clientId || !row.clientSecretEnv) {
      throw new AppError(
        'invalid_input',
        "--auth client-credentials needs --client-id (the app's client id) and --client-secret-env (the NAME of the variable holding its secret).",
      );
    }
    return;
  }
  if (!row.adminTokenEnv) {
    throw new AppError(
      'invalid_input',
      'The shopify destination needs credentials: --auth client-credentials --client-id ID --client-secret-env VAR (an app of your organization), or --admin-token-env naming the variable that holds a static Admin API token.',
    );
  }
}

function describeStore(s: StoreRow, env: Env): string {
  const name = credentialVariable(s);
  const from = `$${name}, ${name && env(name) ? 'set' : 'NOT set'}`;
  switch (credentialModeOf(s)) {
    case 'client-credentials':
      return `store ${s.shopDomain}: destination shopify (client credentials: client id ${s.clientId}, secret from ${from}; tokens requested and renewed by hookrelay)`;
    case 'oauth':
      return `store ${s.shopDomain}: destination shopify (app install, OAuth: client id ${s.clientId}, secret from ${from}; tokens refreshed by hookrelay${s.uninstalledAt != null ? `; uninstalled ${iso(s.uninstalledAt)}, events wait for an install again` : ''})`;
    default:
      return `store ${s.shopDomain}: destination shopify (Admin API token from ${from})`;
  }
}

function setupChecks(env: Env, _store: StoreRow, link: PlatformLinkState | null): PlatformChecks {
  const credentials = link?.credentials;
  return {
    destination_configured: {
      done: !!credentials && credentials.mode !== null && credentials.variableSet === true,
      text: `Destination is Shopify Flow; credentials ${credentials?.mode ?? 'not configured'}${credentials?.variableSet === false ? ' (their variable is not set on the server)' : ''}.`,
    },
    destination_reachable: {
      done: link?.check.result === 'ok',
      text: link ? `A live check of the destination: ${link.check.result}. ${link.check.message}` : 'No live check of the destination.',
    },
    api_version_supported: {
      done: link?.apiVersion.status !== 'unsupported',
      text: link
        ? `Shopify Admin API ${link.apiVersion.version}, supported until ${link.apiVersion.supportedUntil} (${link.apiVersion.status}).`
        : 'No platform API version is known.',
    },
    lifecycle_callback_verifiable: { done: !!appSecret(env), text: LIFECYCLE_CHECK },
  };
}

function startWarnings(stores: StoreRow[], env: Env, now: number): string[] {
  if (!stores.length) return [];
  const out: string[] = [];
  const v = apiVersionStatus(now);
  if (v.status !== 'supported')
    out.push(`Shopify Admin API ${v.version} ${v.status === 'unsupported' ? 'is past' : 'nears'} its end of support (${v.supportedUntil}): upgrade hookrelay.`);
  if (!appSecret(env))
    out.push(
      `A store hands off to Shopify but ${APP_SECRET_ENV[0]} is not set: Flow's lifecycle callback (/flow/lifecycle) answers 503, so merchants cannot enable workflows on hookrelay's triggers. Set it to the app's client secret.`,
    );
  return out;
}

/**
 * The Shopify app's routes. The install, billing and webhook pages are loaded with their first request (a serve
 * that never gets one does not load them), made once per runtime.
 */
function routes(core: Core, ops: PlatformOps): PlatformRoute[] {
  const appInstall = lazy(() => import('./app-install.ts').then((m) => m.createAppInstall(core, ops)));
  const billing = lazy(() => import('./billing-pages.ts').then((m) => m.createBilling(core)));
  const webhooks = lazy(() => import('./webhook-handler.ts').then((m) => m.shopifyWebhooks(core)));
  const json = (name: string) => ({ kind: 'signed', name, audience: 'json' }) as const;
  const GET = ['GET'] as const;
  return [
    { path: '/flow/lifecycle', guard: json('flow lifecycle callback'), handle: createLifecycleHandler(core) },
    { path: CONFIRM_ACTION.path, guard: json('flow action run'), handle: createConfirmationHandler(core, ops) },
    { path: '/auth/install', guard: { kind: 'install' }, handle: async (req) => (await appInstall()).install(req) },
    {
      path: '/auth/callback',
      guard: { kind: 'signed', name: 'app install callback', audience: 'page' },
      handle: async (req) => (await appInstall()).callback(req),
    },
    { path: WEBHOOK_PATH, guard: json('shopify webhook'), handle: async (req) => (await webhooks()).handle(req) },
    { path: '/billing/subscribe', methods: GET, guard: { kind: 'open' }, handle: async (req) => (await billing()).subscribe(req) },
    { path: '/billing/return', methods: GET, guard: { kind: 'open' }, handle: async (req) => (await billing()).returned(req) },
  ];
}

/** A module loaded (and its handler made) on first use, once. */
function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | null = null;
  return () => (p ??= load());
}

export const shopify: Platform = {
  name: 'shopify',
  destination: shopifyPlatform,
  handoff: flowHandoff,
  refusal: flowRefusal,
  resourceId: normalizeResourceId,
  withoutWorkflow,
  startsAlerts: true,
  routes,
  describeStore,
  credentialVariableMissing(s, env) {
    const name = credentialVariable(s);
    return !(name && env(name));
  },
  checkStore,
  forget: (core, storeId) => shopifyPlatform(core).forget(storeId),
  linkState: platformLinkState,
  credentialsView: credentialsState,
  credentialMode: credentialModeOf,
  budgetView: budgetState,
  setupChecks,
  secretEnv: APP_SECRET_ENV,
  startWarnings,
};

/**
 * What the log destination takes from Shopify Flow: it records what would go to Flow, so an event's payload, its
 * size rule, its resource id and the trigger readiness are Flow's (handed over by the registry).
 */
export const flow = {
  handoff: flowHandoff,
  refusal: flowRefusal,
  resourceId: normalizeResourceId,
  withoutWorkflow,
  credentialsView: credentialsState,
  credentialMode: credentialModeOf,
  budgetView: budgetState,
  lifecycleCheck: LIFECYCLE_CHECK,
} satisfies Partial<Platform> & { lifecycleCheck: string };

/** The platform this box is an app of: the Shopify app's secret variables, API version and billing link. */
export const shopifyApp: AppPlatform = {
  secretEnv: APP_SECRET_ENV,
  apiVersion: apiVersionStatus,
  billingLink(config, shopDomain) {
    const handle = shopDomain.replace('.myshopify.com', '');
    const billing = billingMode(config.env);
    const clientId = appClientId(config);
    // Billing through Shopify: the merchant opens the app in their admin and chooses a plan there (human-only).
    const appBillingUrl =
      billing !== 'off' && clientId
        ? `https://admin.shopify.com/store/${handle}/apps/${clientId}`
        : `https://admin.shopify.com/store/${handle}/settings/billing`;
    return { billing, appBillingUrl };
  },
  // The billing pages' module is loaded when the seat's Plan page first asks.
  planChoices: (core, shop) => import('./billing-pages.ts').then((m) => m.planChoiceLinks(core, shop)),
  // The webhook module is loaded with the first sweep, not at start.
  sweep: (core) => import('./webhook-handler.ts').then((m) => m.processPendingShopifyWebhooks(core)),
  embedded: (core, ops) => import('./embedded.ts').then((m) => m.shopifyEmbedded(core, ops)),
};
