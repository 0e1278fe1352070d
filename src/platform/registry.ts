/**
 * The platforms, one per destination name (src/contract/platform.ts): the only file outside a platform's folder
 * that imports it (test/contract/layers.test.ts says so). The relay, the ops, the server and the commands ask the
 * store's platform (platformOf) what to send, how to describe it and which routes to answer.
 */
import type { DestinationName } from '../contract/platform.ts';
import { logPlatform } from './log/index.ts';
import { flow, shopify, shopifyApp } from './shopify/index.ts';
import type { AppPlatform, Platform } from './types.ts';

const PLATFORMS: Record<DestinationName, Platform> = { log: logPlatform(flow), shopify };

/** Every platform, for what is mounted or checked once per platform (routes, secrets, serve's warnings). */
export const platforms: readonly Platform[] = Object.values(PLATFORMS);

/** The store's platform; a destination this build does not know hands off as `log` (records, sends nothing). */
export function platformOf(destination: string): Platform {
  return Object.hasOwn(PLATFORMS, destination) ? PLATFORMS[destination as DestinationName] : PLATFORMS.log;
}

/** The platform this box is an app of: its install, billing and webhooks, whatever a store's destination. */
export const appPlatform: AppPlatform = shopifyApp;

/** Variables holding a platform's secret (the app's client secret), for the redactor. */
export const platformSecretEnv: readonly string[] = [...new Set([...appPlatform.secretEnv, ...platforms.flatMap((p) => p.secretEnv)])];
