/** Stores and box-wide settings: created and changed by the local admin (`hookrelay init`, `store set`), never over HTTP. */
import type { TenantStore } from '../../db/repo.ts';
import type { StoreRow } from '../../db/types.ts';
import { looksLikeToken, normalizeBaseUrl } from '../client/config.ts';
import { AppError } from '../contract/errors.ts';
import type { CoreWith } from '../core.ts';
import { iso } from '../lib/clock.ts';
import { PLANS } from '../contract/plans.ts';

export interface InitStoreInput {
  shopDomain: string;
  platformAccountId?: string;
  installationId?: string;
  plan?: string;
  destination?: 'log' | 'shopify';
  adminTokenEnv?: string;
}

const SHOP = /^[a-z0-9][a-z0-9-]*\.myshopify\.com$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const DESTINATIONS = ['log', 'shopify'] as const;
/** Shopify credential prefixes (Admin API access tokens, app secrets): never a variable name. */
const SHOPIFY_TOKEN = /^shp(at|ca|pa|ss)_/i;

/** The settings key of the box-wide public URL (`hookrelay store set --public-url`). */
export const PUBLIC_URL_SETTING = 'public_url';

function normalizeShop(domain: string): string {
  const shop = domain.trim().toLowerCase();
  if (!SHOP.test(shop)) throw new AppError('invalid_input', 'The shop domain must look like your-store.myshopify.com.');
  return shop;
}

function checkPlan(plan: string): void {
  if (!Object.hasOwn(PLANS, plan)) throw new AppError('invalid_input', `Plan must be one of ${Object.keys(PLANS).join(', ')}.`);
}

function checkDestination(destination: string): asserts destination is StoreRow['destination'] {
  if (!(DESTINATIONS as readonly string[]).includes(destination)) throw new AppError('invalid_input', `Destination must be one of ${DESTINATIONS.join(', ')}.`);
}

/** A variable NAME for the Admin API token; anything shaped like a token is refused without echoing it. */
function checkAdminTokenEnv(name: string): void {
  if (SHOPIFY_TOKEN.test(name) || looksLikeToken(name)) {
    throw new AppError('invalid_input', 'The admin token variable looks like a token. Give the NAME of the environment variable that holds it (e.g. SHOPIFY_ADMIN_TOKEN), never the token.');
  }
  if (!ENV_NAME.test(name)) {
    throw new AppError('invalid_input', 'The admin token variable must be an environment variable NAME in capitals (e.g. SHOPIFY_ADMIN_TOKEN), never the token.');
  }
}

/** The shopify destination cannot work without the name of the variable holding the Admin API token. */
function checkDestinationNeeds(destination: string, adminTokenEnv: string | null | undefined): void {
  if (destination === 'shopify' && !adminTokenEnv) {
    throw new AppError('invalid_input', 'The shopify destination needs --admin-token-env naming the variable that holds the Admin API token.');
  }
}

/**
 * Idempotent: an existing store is returned unchanged (`created: false`) when the flags given match it. A flag
 * that differs is refused rather than silently ignored: settings change with `hookrelay store set`.
 */
export async function initStore(core: CoreWith<TenantStore>, input: InitStoreInput) {
  const shop = normalizeShop(input.shopDomain);
  if (input.plan) checkPlan(input.plan);
  if (input.destination) checkDestination(input.destination);
  if (input.adminTokenEnv) checkAdminTokenEnv(input.adminTokenEnv);
  const existing = await core.repo.getStoreByShop(shop);
  if (existing) {
    refuseIgnoredFlags(existing, input);
    return { created: false, store: storeView(existing) };
  }
  checkDestinationNeeds(input.destination ?? 'log', input.adminTokenEnv);
  const now = core.clock.now();
  const row: StoreRow = {
    id: core.ids.next('st'),
    platformKey: 'shopify',
    platformAccountId: input.platformAccountId ?? shop.replace('.myshopify.com', ''),
    shopDomain: shop,
    installationId: input.installationId ?? `inst_${shop.replace('.myshopify.com', '')}`,
    plan: input.plan ?? 'free',
    billingStatus: 'active',
    destination: input.destination ?? 'log',
    adminTokenEnv: input.adminTokenEnv ?? null,
    createdAt: now,
    updatedAt: now,
  };
  await core.repo.insertStore(row);
  return { created: true, store: storeView(row) };
}

/**
 * The local admin's lever on a self-hosted box (`hookrelay plan set`): on a hosted deployment the platform's
 * billing decides. Held events of the store flow again on the worker's next pass when the new plan has room.
 */
export async function setPlan(core: CoreWith<TenantStore>, shopDomain: string, plan: string) {
  checkPlan(plan);
  const store = await findStore(core, shopDomain);
  const row = { ...store, plan, updatedAt: core.clock.now() };
  await core.repo.updateStore(row);
  return { store: storeView(row), previousPlan: store.plan };
}

const INIT_FLAGS = [
  ['platformAccountId', '--platform-account-id', false],
  ['installationId', '--installation-id', false],
  ['plan', '--plan', true],
  ['destination', '--destination', true],
  ['adminTokenEnv', '--admin-token-env', true],
] as const;

/** `init` on an existing store: a flag whose value differs from the stored one would be ignored, so refuse it. */
function refuseIgnoredFlags(existing: StoreRow, input: InitStoreInput): void {
  const differing = INIT_FLAGS.filter(([field]) => input[field] !== undefined && input[field] !== existing[field]);
  if (differing.length === 0) return;
  const settable = differing.filter(([, , viaSet]) => viaSet);
  const hint = settable.length
    ? `hookrelay store set --shop ${existing.shopDomain} ${settable.map(([field, flag]) => `${flag} ${input[field]}`).join(' ')}`
    : null;
  const fixed = differing.filter(([, , viaSet]) => !viaSet).map(([, flag]) => flag);
  throw new AppError(
    'invalid_input',
    `The store ${existing.shopDomain} already exists; init does not change it (${differing.map(([, flag]) => flag).join(', ')} differ).` +
      (hint ? ` Change settings with: ${hint}.` : '') +
      (fixed.length ? ` ${fixed.join(' and ')} identify the store and cannot change.` : ''),
    { differing: differing.map(([, flag]) => flag), ...(hint ? { hint } : {}) },
  );
}

async function findStore(core: CoreWith<TenantStore>, shopDomain: string): Promise<StoreRow> {
  const store = await core.repo.getStoreByShop(shopDomain.trim().toLowerCase());
  if (!store) throw new AppError('not_found', 'No store with that shop domain; run hookrelay init first.');
  return store;
}

/** The box-wide public URL the local admin set, or null (serve then uses HOOKRELAY_PUBLIC_URL or http://host:port). */
export async function storedPublicUrl(core: CoreWith<TenantStore>): Promise<string | null> {
  const raw = await core.repo.getSetting(PUBLIC_URL_SETTING);
  return raw === null ? null : (JSON.parse(raw) as string);
}

/** `hookrelay store show`: one store or all, and the box-wide settings. */
export async function showStores(core: CoreWith<TenantStore>, shopDomain?: string) {
  const stores = shopDomain ? [await findStore(core, shopDomain)] : await core.repo.listStores();
  return { stores: stores.map(storeView), settings: { publicUrl: await storedPublicUrl(core) } };
}

export interface StoreSettingsInput {
  destination?: string;
  adminTokenEnv?: string;
  plan?: string;
  publicUrl?: string;
}

/**
 * `hookrelay store set`: the settings `init` will not change. Validated as a whole before anything is written:
 * the shopify destination needs a token variable NAME. The public URL is box-wide (every store's endpoint URLs),
 * so it alone needs no shop. A running server applies the new settings when restarted.
 */
export async function setStoreSettings(core: CoreWith<TenantStore>, shopDomain: string | undefined, input: StoreSettingsInput) {
  const storeFields = (['destination', 'adminTokenEnv', 'plan'] as const).filter((f) => input[f] !== undefined);
  if (storeFields.length === 0 && input.publicUrl === undefined) {
    throw new AppError('invalid_input', 'Nothing to set: give --destination, --admin-token-env, --plan or --public-url.');
  }
  if (storeFields.length && !shopDomain) throw new AppError('invalid_input', '--shop is required to change a store setting.');
  if (input.plan !== undefined) checkPlan(input.plan);
  if (input.destination !== undefined) checkDestination(input.destination);
  if (input.adminTokenEnv !== undefined) checkAdminTokenEnv(input.adminTokenEnv);
  const publicUrl = input.publicUrl === undefined ? undefined : normalizeBaseUrl(input.publicUrl, '--public-url');
  const store = shopDomain ? await findStore(core, shopDomain) : null;
  const changed: string[] = [];
  let row = store;
  if (store) {
    row = {
      ...store,
      plan: input.plan ?? store.plan,
      destination: (input.destination as StoreRow['destination'] | undefined) ?? store.destination,
      adminTokenEnv: input.adminTokenEnv ?? store.adminTokenEnv,
      updatedAt: core.clock.now(),
    };
    checkDestinationNeeds(row.destination, row.adminTokenEnv);
    changed.push(...storeFields.filter((f) => row![f] !== store[f]));
    if (changed.length) await core.repo.updateStore(row);
  }
  const previousPublicUrl = await storedPublicUrl(core);
  if (publicUrl !== undefined && publicUrl !== previousPublicUrl) {
    await core.repo.putSetting(PUBLIC_URL_SETTING, JSON.stringify(publicUrl), core.clock.now());
    changed.push('publicUrl');
  }
  return {
    ...(row ? { store: storeView(row) } : {}),
    settings: { publicUrl: publicUrl ?? previousPublicUrl },
    changed,
    ...(changed.length ? { note: 'A running hookrelay serve applies these settings when restarted.' } : {}),
  };
}

/** One line for stderr (serve, init): where this store's events go. Names the token variable, never its value. */
export function describeDestination(s: StoreRow, env: (name: string) => string | undefined): string {
  if (s.destination !== 'shopify') return `store ${s.shopDomain}: destination log (records what would go to Flow; nothing is sent)`;
  const tokenSet = s.adminTokenEnv && env(s.adminTokenEnv) ? 'set' : 'NOT set';
  return `store ${s.shopDomain}: destination shopify (Admin API token from $${s.adminTokenEnv}, ${tokenSet})`;
}

export function storeView(s: StoreRow) {
  return {
    storeId: s.id,
    platformKey: s.platformKey,
    platformAccountId: s.platformAccountId,
    shopDomain: s.shopDomain,
    installationId: s.installationId,
    plan: s.plan,
    billingStatus: s.billingStatus,
    destination: s.destination,
    adminTokenEnv: s.adminTokenEnv,
    createdAt: iso(s.createdAt),
  };
}
