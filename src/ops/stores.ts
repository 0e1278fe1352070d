/** Stores and box-wide settings: created and changed by the local admin (`hookrelay init`, `store set`), never over HTTP. */
import type { PlatformLinkStore } from '../../db/areas/platform-links.ts';
import type { TenantStore } from '../../db/repo.ts';
import type { StoreRow } from '../../db/types.ts';
import { looksLikeToken, normalizeBaseUrl } from '../client/config.ts';
import { AppError } from '../contract/errors.ts';
import { EDITION } from '../contract/scopes.ts';
import { CREDENTIAL_MODES, type CredentialMode, DESTINATIONS, type DestinationName, installLink } from '../contract/platform.ts';
import type { CoreWith } from '../core.ts';
import { iso } from '../lib/clock.ts';
import { DEFAULT_PLAN, PLANS } from '../contract/plans.ts';
import { platformOf, platforms } from '../platform/registry.ts';
import { handoffState } from './platform-link.ts';

export interface InitStoreInput {
  shopDomain: string;
  platformAccountId?: string;
  installationId?: string;
  plan?: string;
  destination?: DestinationName;
  adminTokenEnv?: string;
  /** How the Admin API token is obtained; derived from the other flags when not given (src/contract/platform.ts). */
  auth?: string;
  clientId?: string;
  clientSecretEnv?: string;
}

const SHOP = /^[a-z0-9][a-z0-9-]*\.myshopify\.com$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
/** Shopify credential prefixes (Admin API access tokens, app secrets): never a variable name. */
const SHOPIFY_TOKEN = /^shp(at|ca|pa|ss)_/i;

/** The settings key of the box-wide public URL (`hookrelay store set --public-url`). */
const PUBLIC_URL_SETTING = 'public_url';
/** The settings key of the Shopify app's client id for installs (`hookrelay store set --app-client-id`). */
const APP_CLIENT_ID_SETTING = 'shopify_app_client_id';

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

/** A variable NAME (the Admin API token's, the client secret's); anything shaped like a secret is refused without echoing it. */
function checkVariableName(name: string, what: string, example: string): void {
  if (SHOPIFY_TOKEN.test(name) || looksLikeToken(name)) {
    throw new AppError(
      'invalid_input',
      `The ${what} variable looks like a secret. Give the NAME of the environment variable that holds it (e.g. ${example}), never the value.`,
    );
  }
  if (!ENV_NAME.test(name)) {
    throw new AppError('invalid_input', `The ${what} variable must be an environment variable NAME in capitals (e.g. ${example}), never the value.`);
  }
}

const checkAdminTokenEnv = (name: string) => checkVariableName(name, 'admin token', 'SHOPIFY_ADMIN_TOKEN');
const checkClientSecretEnv = (name: string) => checkVariableName(name, 'client secret', 'SHOPIFY_CLIENT_SECRET');

/** A Shopify app's client id (Dev Dashboard → Settings): letters, digits, `_` and `-`; never a secret. */
function checkClientId(id: string): void {
  if (SHOPIFY_TOKEN.test(id))
    throw new AppError(
      'invalid_input',
      "That looks like a secret, not a client id. Give the app's client id (Dev Dashboard → the app → Settings); the secret goes in a variable.",
    );
  if (!/^[A-Za-z0-9_-]{8,100}$/.test(id)) throw new AppError('invalid_input', "The client id must be the app's client id (8 to 100 letters, digits, _ or -).");
}

function checkAuth(auth: string, where: { publicUrl: string; shopDomain: string }): asserts auth is CredentialMode {
  if (!(CREDENTIAL_MODES as readonly string[]).includes(auth)) throw new AppError('invalid_input', `--auth must be one of ${CREDENTIAL_MODES.join(', ')}.`);
  if (auth === 'oauth') {
    throw new AppError(
      'invalid_input',
      `--auth oauth is set by installing the app on the store: the merchant opens ${installLink(where)} (README, Hosting for many stores). For an app of your own organization use client-credentials, or static.`,
    );
  }
}

/** The mode the flags ask for: `--auth`, else the one their credentials imply. */
function impliedAuth(input: {
  auth?: string;
  adminTokenEnv?: string | null;
  clientId?: string | null;
  clientSecretEnv?: string | null;
}): CredentialMode | undefined {
  if (input.auth) return input.auth as CredentialMode;
  if (input.clientId || input.clientSecretEnv) return 'client-credentials';
  if (input.adminTokenEnv) return 'static';
  return undefined;
}

/**
 * Idempotent: an existing store is returned unchanged (`created: false`) when the flags given match it. A flag
 * that differs is refused rather than silently ignored: settings change with `hookrelay store set`.
 */
export async function initStore(core: CoreWith<TenantStore>, input: InitStoreInput) {
  const shop = normalizeShop(input.shopDomain);
  checkCredentialFlags({ publicUrl: core.config.publicUrl, shopDomain: shop }, input);
  const existing = await core.repo.getStoreByShop(shop);
  if (existing) {
    refuseIgnoredFlags(existing, input);
    return { created: false, store: storeView(existing) };
  }
  const row = newStoreRow(core, shop, {
    platformAccountId: input.platformAccountId,
    installationId: input.installationId,
    plan: input.plan ?? DEFAULT_PLAN,
    destination: input.destination ?? 'log',
    adminTokenEnv: input.adminTokenEnv ?? null,
    credentialMode: impliedAuth(input) ?? null,
    clientId: input.clientId ?? null,
    clientSecretEnv: input.clientSecretEnv ?? null,
  });
  platformOf(row.destination).checkStore(row);
  await core.repo.insertStore(row);
  return { created: true, store: storeView(row) };
}

/**
 * A new store's row (`init`, or an app install): the platform account and installation ids default to the shop's
 * handle until the platform reports its own; billing active, installed.
 */
export function newStoreRow(
  core: CoreWith<unknown>,
  shop: string,
  fields: Pick<StoreRow, 'plan' | 'destination' | 'adminTokenEnv' | 'credentialMode' | 'clientId' | 'clientSecretEnv'> &
    Partial<Pick<StoreRow, 'platformAccountId' | 'installationId'>>,
): StoreRow {
  const now = core.clock.now();
  const handle = shop.replace('.myshopify.com', '');
  return {
    id: core.ids.next('st'),
    platformKey: EDITION.platformKey,
    shopDomain: shop,
    billingStatus: 'active',
    uninstalledAt: null,
    createdAt: now,
    updatedAt: now,
    ...fields,
    platformAccountId: fields.platformAccountId ?? handle,
    installationId: fields.installationId ?? `inst_${handle}`,
  };
}

/** Shapes of the flags init and store set share, before anything is read or written. `where`: the install link's box and shop. */
function checkCredentialFlags(
  where: { publicUrl: string; shopDomain: string },
  input: {
    plan?: string;
    destination?: string;
    adminTokenEnv?: string;
    auth?: string;
    clientId?: string;
    clientSecretEnv?: string;
  },
): void {
  if (input.plan !== undefined) checkPlan(input.plan);
  if (input.destination !== undefined) checkDestination(input.destination);
  if (input.adminTokenEnv !== undefined) checkAdminTokenEnv(input.adminTokenEnv);
  if (input.clientSecretEnv !== undefined) checkClientSecretEnv(input.clientSecretEnv);
  if (input.clientId !== undefined) checkClientId(input.clientId);
  if (input.auth !== undefined) checkAuth(input.auth, where);
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
  ['auth', '--auth', true],
  ['adminTokenEnv', '--admin-token-env', true],
  ['clientId', '--client-id', true],
  ['clientSecretEnv', '--client-secret-env', true],
] as const;

/** `init` on an existing store: a flag whose value differs from the stored one would be ignored, so refuse it. */
function refuseIgnoredFlags(existing: StoreRow, input: InitStoreInput): void {
  const stored = { ...existing, auth: platformOf(existing.destination).credentialMode(existing) ?? undefined };
  const differing = INIT_FLAGS.filter(([field]) => input[field] !== undefined && input[field] !== stored[field]);
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

async function storedSetting(core: CoreWith<TenantStore>, key: string): Promise<string | null> {
  const raw = await core.repo.getSetting(key);
  return raw === null ? null : (JSON.parse(raw) as string);
}

/** The box-wide public URL the local admin set, or null (serve then uses HOOKRELAY_PUBLIC_URL or http://host:port). */
export const storedPublicUrl = (core: CoreWith<TenantStore>) => storedSetting(core, PUBLIC_URL_SETTING);

/** The app client id the local admin set, or null (serve then reads HOOKRELAY_SHOPIFY_CLIENT_ID, which wins). */
export const storedAppClientId = (core: CoreWith<TenantStore>) => storedSetting(core, APP_CLIENT_ID_SETTING);

/** The box-wide settings as `store show` and `store set` print them. */
async function boxSettings(core: CoreWith<TenantStore>) {
  return { publicUrl: await storedPublicUrl(core), appClientId: await storedAppClientId(core) };
}

/**
 * `hookrelay store show`: one store or all, each with its credentials (mode, variable names, token times; never a
 * value) and its handoff (active, or paused: why, since when, next probe), and the box-wide settings.
 */
export async function showStores(core: CoreWith<TenantStore & { links: PlatformLinkStore }>, shopDomain?: string) {
  const stores = shopDomain ? [await findStore(core, shopDomain)] : await core.repo.listStores();
  const out = [];
  for (const s of stores) {
    const link = await core.repo.links.get(s.id);
    out.push({
      ...storeView(s),
      credentials: platformOf(s.destination).credentialsView(s, link, core.config.env),
      handoff: handoffState(link, { publicUrl: core.config.publicUrl, shopDomain: s.shopDomain }),
    });
  }
  return { stores: out, settings: await boxSettings(core) };
}

export interface StoreSettingsInput {
  destination?: string;
  adminTokenEnv?: string;
  auth?: string;
  clientId?: string;
  clientSecretEnv?: string;
  plan?: string;
  publicUrl?: string;
  appClientId?: string;
}

const STORE_FIELDS = ['destination', 'auth', 'adminTokenEnv', 'clientId', 'clientSecretEnv', 'plan'] as const;
const CREDENTIAL_FIELDS: readonly string[] = ['destination', 'credentialMode', 'adminTokenEnv', 'clientId', 'clientSecretEnv'];

/**
 * `hookrelay store set`: the settings `init` will not change. Validated as a whole before anything is written: the
 * shopify destination needs the credentials its mode reads. The public URL is box-wide (every store's endpoint
 * URLs), so it alone needs no shop. A running serve reads store settings afresh within seconds; changed
 * credentials drop the token obtained for the old ones and end a pause they caused (the next send decides again).
 */
export async function setStoreSettings(core: CoreWith<TenantStore & { links: PlatformLinkStore }>, shopDomain: string | undefined, input: StoreSettingsInput) {
  const given = STORE_FIELDS.filter((f) => input[f] !== undefined);
  if (given.length === 0 && input.publicUrl === undefined && input.appClientId === undefined) {
    throw new AppError(
      'invalid_input',
      'Nothing to set: give --destination, --auth, --admin-token-env, --client-id, --client-secret-env, --plan, --public-url or --app-client-id.',
    );
  }
  if (given.length && !shopDomain) throw new AppError('invalid_input', '--shop is required to change a store setting.');
  checkCredentialFlags({ publicUrl: core.config.publicUrl, shopDomain: shopDomain?.trim().toLowerCase() ?? '' }, input);
  // An empty --public-url clears the setting: serve then advertises HOOKRELAY_PUBLIC_URL or its listening address.
  const publicUrl = input.publicUrl === undefined ? undefined : input.publicUrl.trim() === '' ? null : normalizeBaseUrl(input.publicUrl, '--public-url');
  const appClientId = input.appClientId?.trim();
  if (appClientId !== undefined) checkClientId(appClientId);
  const store = shopDomain ? await findStore(core, shopDomain) : null;
  const changed: string[] = [];
  let row = store;
  if (store) {
    const auth = impliedAuth(input);
    row = {
      ...store,
      plan: input.plan ?? store.plan,
      destination: (input.destination as StoreRow['destination'] | undefined) ?? store.destination,
      credentialMode: auth ?? platformOf(store.destination).credentialMode(store),
      adminTokenEnv: input.adminTokenEnv ?? store.adminTokenEnv,
      clientId: input.clientId ?? store.clientId,
      clientSecretEnv: input.clientSecretEnv ?? store.clientSecretEnv,
      updatedAt: core.clock.now(),
    };
    platformOf(row.destination).checkStore(row);
    const fields = ['plan', ...CREDENTIAL_FIELDS] as const;
    changed.push(...fields.filter((f) => row![f as keyof StoreRow] !== store[f as keyof StoreRow]).map((f) => (f === 'credentialMode' ? 'auth' : f)));
    if (changed.length) await core.repo.updateStore(row);
    if (changed.some((f) => f !== 'plan')) await credentialsChanged(core, row);
  }
  const previous = await boxSettings(core);
  for (const [field, key, value] of [
    ['publicUrl', PUBLIC_URL_SETTING, publicUrl],
    ['appClientId', APP_CLIENT_ID_SETTING, appClientId],
  ] as const) {
    if (value === undefined || value === previous[field]) continue;
    await core.repo.putSetting(key, JSON.stringify(value), core.clock.now());
    changed.push(field);
  }
  return {
    ...(row ? { store: storeView(row) } : {}),
    settings: { publicUrl: publicUrl === undefined ? previous.publicUrl : publicUrl, appClientId: appClientId ?? previous.appClientId },
    changed,
    ...(changed.length ? { note: settingsNote(changed, publicUrl === null) } : {}),
  };
}

/** What `store set` tells the operator about when its changes apply: truthfully, per kind of setting. */
function settingsNote(changed: string[], publicUrlCleared = false): string {
  const notes = [];
  if (changed.some((f) => f !== 'publicUrl' && f !== 'appClientId')) {
    notes.push(
      "A running hookrelay serve applies store settings to new handoffs within 5 seconds, no restart needed; a variable named here is read from serve's environment, so export it where serve runs (and restart serve if it was not set when serve started).",
    );
  }
  if (changed.includes('publicUrl')) {
    notes.push(
      publicUrlCleared
        ? 'The public URL setting is cleared: once serve is restarted it advertises --public-url or HOOKRELAY_PUBLIC_URL when given, else its own listening address.'
        : 'The public URL applies when serve is restarted (HOOKRELAY_PUBLIC_URL or --public-url still win over it).',
    );
  }
  if (changed.includes('appClientId'))
    notes.push('The app client id applies to installs when serve is restarted (HOOKRELAY_SHOPIFY_CLIENT_ID still wins over it).');
  return notes.join(' ');
}

/** New credentials: the token obtained with the old ones goes, and a pause they caused ends (the next send decides). */
async function credentialsChanged(core: CoreWith<{ links: PlatformLinkStore }>, store: StoreRow): Promise<void> {
  const now = core.clock.now();
  await core.repo.links.clearToken(store.id, now);
  await core.repo.links.resume(store.id, now);
  for (const platform of platforms) platform.forget(core, store.id);
}

/** One line for stderr (serve, init): where this store's events go and how its token is had. Names variables, never values. */
export function describeDestination(s: StoreRow, env: (name: string) => string | undefined): string {
  return platformOf(s.destination).describeStore(s, env);
}

/** Whether the store's credentials read a variable not set where serve runs (serve warns). */
export function credentialVariableMissing(s: StoreRow, env: (name: string) => string | undefined): boolean {
  return platformOf(s.destination).credentialVariableMissing(s, env);
}

function storeView(s: StoreRow) {
  return {
    storeId: s.id,
    platformKey: s.platformKey,
    platformAccountId: s.platformAccountId,
    shopDomain: s.shopDomain,
    installationId: s.installationId,
    plan: s.plan,
    billingStatus: s.billingStatus,
    destination: s.destination,
    auth: platformOf(s.destination).credentialMode(s),
    installed: s.uninstalledAt == null,
    uninstalledAt: s.uninstalledAt == null ? null : iso(s.uninstalledAt),
    adminTokenEnv: s.adminTokenEnv,
    clientId: s.clientId,
    clientSecretEnv: s.clientSecretEnv,
    createdAt: iso(s.createdAt),
  };
}

/** The named store, or the box's only one (an admin command's `--shop`, absent); several stores and no `--shop` is a usage error naming them. */
export async function storeOrOnly(core: CoreWith<TenantStore>, shopDomain: string | undefined): Promise<StoreRow> {
  if (shopDomain !== undefined) {
    const store = await core.repo.getStoreByShop(shopDomain.trim().toLowerCase());
    if (!store) throw new AppError('not_found', `No store ${shopDomain}; run hookrelay init --shop ${shopDomain} first.`);
    return store;
  }
  const stores = await core.repo.listStores();
  if (stores.length === 1) return stores[0]!;
  if (stores.length === 0) throw new AppError('not_found', 'This box has no store yet; run hookrelay init --shop <domain> first.');
  throw new AppError('invalid_input', `This box has ${stores.length} stores: name one with --shop (${stores.map((s) => s.shopDomain).join(', ')}).`);
}
