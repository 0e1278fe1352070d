/**
 * The platform link as the contract shows it: how a store's credentials are obtained, why its handoff may be
 * paused, and what a live check of the destination found. Platform code (src/platform/) decides these; setup
 * state, the reliability reads, event detail, /metrics and doctor only report them.
 */

/**
 * Where a store's events are handed off: `log` records what would go to Flow (nothing is sent), `shopify` starts
 * Flow triggers on the store. Each names one platform of src/platform/registry.ts.
 */
export const DESTINATIONS = ['log', 'shopify'] as const;
export type DestinationName = (typeof DESTINATIONS)[number];

/** Whether the deployment bills through the app's platform (HOOKRELAY_BILLING): `off`, or Shopify's (test) charges. */
export const BILLING_MODES = ['off', 'shopify', 'shopify-test'] as const;
export type BillingMode = (typeof BILLING_MODES)[number];

/**
 * How hookrelay gets a store's Admin API token:
 * - `static`: a token read at run time from the environment variable the store names (a legacy custom app);
 * - `client-credentials`: requested by hookrelay with the app's client id and secret (the secret read from a
 *   variable the store names), renewed before it expires and once on a 401;
 * - `oauth`: an expiring offline token and refresh token from the app's install (authorization code grant,
 *   /auth/install), refreshed before it expires and once on a 401, the newest pair stored before use.
 */
export const CREDENTIAL_MODES = ['static', 'client-credentials', 'oauth'] as const;
export type CredentialMode = (typeof CREDENTIAL_MODES)[number];

/**
 * Why a store's handoff is paused (events wait `queued`, never `failed`): its credentials, or a platform that keeps
 * failing to answer (network errors, timeouts, 5xx several times in a row).
 */
export const PAUSE_REASONS = ['credentials', 'platform_unavailable', 'uninstalled'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

/** What a live, authenticated check of the destination found (a cheap query with the store's credentials). */
export const LINK_CHECK_RESULTS = [
  'ok',
  'credentials_missing',
  'credentials_refused',
  'token_request_failed',
  'app_uninstalled',
  'unreachable',
  'throttled',
  'not_applicable',
] as const;
export type LinkCheckResult = (typeof LINK_CHECK_RESULTS)[number];

/**
 * Stable codes of a paused handoff, each with the action that clears it and what a live check of the destination
 * reports while it holds (`check`). A configuration problem on this box is never labelled a platform rejection:
 * `SVC_CREDENTIALS_MISSING` is about hookrelay's settings, the others about what the platform answered.
 */
export const PAUSE_CODES = {
  SVC_CREDENTIALS_MISSING: {
    reason: 'credentials',
    check: 'credentials_missing',
    recommendedAction:
      "Set the variable the store names where hookrelay serve runs (hookrelay store show lists it) and restart serve, or fix the store's credentials with hookrelay store set.",
  },
  SVC_CREDENTIALS_REFUSED: {
    reason: 'credentials',
    check: 'credentials_refused',
    recommendedAction:
      "The platform refused the store's access token (401/403). Check the app is still installed on the store with the scopes it needs; for a static token, export a valid one and restart serve. Handoff resumes by itself once a probe succeeds.",
  },
  SVC_TOKEN_REQUEST_FAILED: {
    reason: 'credentials',
    check: 'token_request_failed',
    recommendedAction:
      "The platform would not issue an access token for the store's client id and secret. Check both in the app's settings (Dev Dashboard) and that the app is installed on the store; handoff resumes by itself once a probe succeeds.",
  },
  SVC_REINSTALL_REQUIRED: {
    reason: 'credentials',
    check: 'credentials_refused',
    recommendedAction:
      "Shopify no longer accepts the store's refresh token (expired or revoked), so no new access token can be had. The merchant reinstalls the app: {public URL}/auth/install?shop=<shop>. Events wait meanwhile and go once it is reinstalled.",
  },
  SVC_APP_UNINSTALLED: {
    reason: 'uninstalled',
    check: 'app_uninstalled',
    recommendedAction:
      'The merchant uninstalled the app, which ended its access to the store. Events are kept and wait; if the merchant installs the app again ({public URL}/auth/install?shop=<shop>) they are handed off.',
  },
  SVC_PLATFORM_UNAVAILABLE: {
    reason: 'platform_unavailable',
    check: 'unreachable',
    recommendedAction:
      "Shopify is not answering (network errors, timeouts or 5xx in a row). Nothing to do here: events wait and go once a probe gets an answer. If it lasts, check Shopify's status page and this box's network (DNS, proxy, firewall).",
  },
} as const satisfies Record<string, { reason: PauseReason; check: LinkCheckResult; recommendedAction: string }>;
export type PauseCode = keyof typeof PAUSE_CODES;

/** The page a merchant opens to install the app on `shopDomain`, on the box's public URL. */
export function installLink(where: { publicUrl: string; shopDomain: string }): string {
  return `${where.publicUrl.replace(/\/+$/, '')}/auth/install?shop=${encodeURIComponent(where.shopDomain)}`;
}

/** A pause's recommended action for one store: its install link with the box's public URL and the store's shop. */
export function pauseAction(code: PauseCode, where: { publicUrl: string; shopDomain: string }): string {
  return PAUSE_CODES[code].recommendedAction.replaceAll('{public URL}/auth/install?shop=<shop>', installLink(where));
}

/**
 * What to do about a live check's result: the action of the pause it stands for (the first that reports it, its
 * install link on `where`), or for a throttled check, to run it again; null for results that need nothing.
 */
export function linkCheckAdvice(result: LinkCheckResult, where: { publicUrl: string; shopDomain: string }): string | null {
  if (result === 'throttled') return "The store's API budget is spent for the moment; check again shortly.";
  const code = (Object.keys(PAUSE_CODES) as PauseCode[]).find((c) => PAUSE_CODES[c].check === result);
  return code ? pauseAction(code, where) : null;
}
