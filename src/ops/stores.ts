/** Stores: created by the local admin (`hookrelay init`), never over HTTP. */
import type { StoreRow } from '../../db/types.ts';
import { AppError } from '../contract/errors.ts';
import type { Core } from '../core.ts';
import { iso } from '../lib/clock.ts';
import { PLANS } from './usage.ts';


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

/** Idempotent: an existing store with the same shop is returned unchanged (`created: false`). */
export async function initStore(core: Core, input: InitStoreInput) {
  const shop = input.shopDomain.trim().toLowerCase();
  if (!SHOP.test(shop)) throw new AppError('invalid_input', 'The shop domain must look like your-store.myshopify.com.');
  if (input.plan && !Object.hasOwn(PLANS, input.plan)) {
    throw new AppError('invalid_input', `Plan must be one of ${Object.keys(PLANS).join(', ')}.`);
  }
  if (input.adminTokenEnv && !ENV_NAME.test(input.adminTokenEnv)) {
    throw new AppError('invalid_input', 'The admin token variable must be an environment variable NAME (e.g. SHOPIFY_ADMIN_TOKEN), never the token.');
  }
  if (input.destination === 'shopify' && !input.adminTokenEnv) {
    throw new AppError('invalid_input', 'The shopify destination needs --admin-token-env naming the variable that holds the Admin API token.');
  }
  const existing = await core.repo.getStoreByShop(shop);
  if (existing) return { created: false, store: storeView(existing) };
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
export async function setPlan(core: Core, shopDomain: string, plan: string) {
  if (!Object.hasOwn(PLANS, plan)) throw new AppError('invalid_input', `Plan must be one of ${Object.keys(PLANS).join(', ')}.`);
  const store = await core.repo.getStoreByShop(shopDomain.trim().toLowerCase());
  if (!store) throw new AppError('not_found', 'No store with that shop domain; run hookrelay init first.');
  const row = { ...store, plan, updatedAt: core.clock.now() };
  await core.repo.updateStore(row);
  return { store: storeView(row), previousPlan: store.plan };
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
