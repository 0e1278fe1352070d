/** The `shopify` destination: Admin GraphQL flowTriggerReceive with the store's access token. */
import { SHOPIFY_ADMIN_API_VERSION } from '../../contract/triggers.ts';
import type { Destination, HandoffOutcome } from './types.ts';

export const FLOW_TRIGGER_RECEIVE = `mutation flowTriggerReceive($handle: String, $payload: JSON) {
  flowTriggerReceive(handle: $handle, payload: $payload) {
    userErrors { field message }
  }
}`;

export interface ShopifyDestinationOptions {
  /** Replaces `https://<shop>`; tests point it at the fake Admin server. */
  adminUrl: string | null;
  env: (name: string) => string | undefined;
}

const clip = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}…` : s);

export function graphqlUrl(shopDomain: string, adminUrl: string | null): string {
  const base = (adminUrl ?? `https://${shopDomain}`).replace(/\/+$/, '');
  return `${base}/admin/api/${SHOPIFY_ADMIN_API_VERSION}/graphql.json`;
}

export function shopifyDestination(opts: ShopifyDestinationOptions): Destination {
  return {
    name: 'shopify',
    async send(req, timeoutMs): Promise<HandoffOutcome> {
      const tokenVar = req.store.adminTokenEnv;
      const token = tokenVar ? opts.env(tokenVar) : undefined;
      if (!token) {
        const message = tokenVar
          ? `The Admin API token variable ${tokenVar} is not set on the server.`
          : 'The store has no Admin API token variable configured (hookrelay store set --shop <shop> --admin-token-env NAME).';
        return { kind: 'failed', httpStatus: null, errorClass: 'config', message };
      }
      let res: Response;
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        res = await fetch(graphqlUrl(req.store.shopDomain, opts.adminUrl), {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Shopify-Access-Token': token },
          body: JSON.stringify({ query: FLOW_TRIGGER_RECEIVE, variables: { handle: req.handle, payload: req.payload } }),
          signal,
        });
      } catch (err) {
        const timedOut = signal.aborted || (err instanceof Error && err.name === 'TimeoutError');
        return timedOut
          ? { kind: 'retry', httpStatus: null, errorClass: 'timeout', message: 'The platform did not answer in time.' }
          : { kind: 'retry', httpStatus: null, errorClass: 'network', message: 'The platform could not be reached.' };
      }
      if (res.status === 429) {
        return { kind: 'retry', httpStatus: 429, errorClass: 'throttled', message: 'Throttled by the platform.', retryAfterMs: retryAfterMs(res.headers.get('retry-after')) };
      }
      if (res.status >= 500) return { kind: 'retry', httpStatus: res.status, errorClass: 'server_error', message: `Platform answered HTTP ${res.status}.` };
      if (res.status !== 200) return { kind: 'failed', httpStatus: res.status, errorClass: 'http_error', message: `Platform answered HTTP ${res.status}.` };

      let doc: GraphqlReply;
      try {
        doc = (await res.json()) as GraphqlReply;
      } catch {
        return { kind: 'retry', httpStatus: 200, errorClass: 'server_error', message: 'Platform answered with an unreadable body.' };
      }
      const errors = doc.errors ?? [];
      if (errors.some((e) => e.extensions?.code === 'THROTTLED')) {
        return { kind: 'retry', httpStatus: 200, errorClass: 'throttled', message: 'Throttled by the platform (GraphQL cost).' };
      }
      if (errors.length) return { kind: 'failed', httpStatus: 200, errorClass: 'user_errors', message: clip(errors.map((e) => e.message ?? 'error').join('; ')) };
      const userErrors = doc.data?.flowTriggerReceive?.userErrors;
      if (!Array.isArray(userErrors)) return { kind: 'retry', httpStatus: 200, errorClass: 'server_error', message: 'Platform reply lacked flowTriggerReceive.' };
      if (userErrors.length) {
        const text = userErrors.map((u) => `${(u.field ?? []).join('.') || 'payload'}: ${u.message ?? ''}`).join('; ');
        return { kind: 'failed', httpStatus: 200, errorClass: 'user_errors', message: clip(text) };
      }
      return { kind: 'delivered', httpStatus: 200 };
    },
  };
}

interface GraphqlReply {
  data?: { flowTriggerReceive?: { userErrors?: { field?: string[] | null; message?: string }[] } | null } | null;
  errors?: { message?: string; extensions?: { code?: string } }[];
}

/** Retry-After as seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
