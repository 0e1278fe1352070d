/**
 * What the handoff worker and the agent API see of a workflow platform: a destination that hands one event off,
 * and, for a platform that can pause a store (credentials), a probe of the link. Everything platform-specific
 * (URLs, tokens, API versions, error shapes) stays behind this, in a sibling folder per platform.
 */
import type { PlatformLinkRow, PlatformLinkStore } from '../../db/areas/platform-links.ts';
import type { ReadinessStore } from '../../db/repo.ts';
import type { EndpointRow, EventRow, StoreRow } from '../../db/types.ts';
import type { BillingMode, CredentialMode, DestinationName, LinkCheckResult, PauseCode, PauseReason } from '../contract/platform.ts';
import type { ManifestPlatform } from '../contract/manifest.ts';
import type { PlatformLinkState } from '../contract/platform-schemas.ts';
import type { Core, CoreWith, Runtime } from '../core.ts';
import type { HeldSecrets } from '../lib/redact.ts';

/** One trigger to start on the platform: the store, the trigger's handle and its fields. */
export interface TriggerRequest {
  store: StoreRow;
  handle: string;
  /** The trigger's fields: an event's from its platform (Platform.handoff), an alert's from src/relay/alerts.ts. */
  payload: TriggerPayload;
}

/** A trigger's fields as sent: text, numbers, and objects of the extension's custom types (the sender's fields). */
export type TriggerPayload = Record<string, string | number | object>;

/** An event's handoff: its trigger, with the event and the endpoint it came through. */
export interface HandoffRequest extends TriggerRequest {
  endpoint: EndpointRow;
  event: EventRow;
}

/** Error classes, recorded on attempts and counted by reliability reads. */
export type AttemptErrorClass =
  | 'throttled'
  | 'server_error'
  | 'timeout'
  | 'network'
  | 'user_errors'
  | 'http_error'
  | 'config'
  | 'payload_too_large'
  | 'no_workflow'
  | 'credentials';

/** Why a store's handoff must wait, and the stable code that says so (src/contract/platform.ts). */
export interface PauseRequest {
  reason: PauseReason;
  code: PauseCode;
  /** One line for people: names variables and statuses, never a token or secret. */
  message: string;
}

export type HandoffOutcome =
  | { kind: 'delivered'; httpStatus: number | null }
  | { kind: 'retry'; httpStatus: number | null; errorClass: AttemptErrorClass; message: string; retryAfterMs?: number }
  | { kind: 'failed'; httpStatus: number | null; errorClass: AttemptErrorClass; message: string }
  /** Flow has no enabled workflow for the trigger: decided before any request is sent. */
  | { kind: 'no_workflow'; httpStatus: null; errorClass: 'no_workflow'; message: string }
  /** The platform could not pay for the call now (THROTTLED): no attempt spent, the event goes again at `until`. */
  | { kind: 'deferred'; httpStatus: number | null; errorClass: 'throttled'; message: string; until: number }
  /**
   * The store's handoff must pause (credentials missing, refused, or not obtainable; or the token endpoint out,
   * `server_error`): the event waits, never fails. `sent` says whether a request reached the platform (an attempt
   * to record) or nothing left this box.
   */
  | { kind: 'paused'; httpStatus: number | null; errorClass: 'credentials' | 'server_error'; message: string; sent: boolean; pause: PauseRequest };

/** What a live, authenticated look at the destination found. */
export interface LinkCheck {
  result: LinkCheckResult;
  message: string;
  httpStatus: number | null;
  /** When: the clock's ms. */
  checkedAt: number;
  /** Set when the result is a credential failure: the pause it calls for. */
  pause?: PauseRequest;
}

export interface Destination {
  readonly name: DestinationName;
  /**
   * Whether a send leaves this box (default true). Such a send is journaled `sending` before it leaves and its
   * attempt recorded as soon as it ends, so a crash repeats only what was in flight, visibly. A local one (the log
   * destination) is not journaled: its attempt is written once, with its round, and a crash before that record
   * repeats its line without an `unknown` attempt (nothing left the box).
   */
  readonly external?: boolean;
  /** `timeoutMs`: how long a request to the platform may take (a destination without one ignores it). */
  send(req: HandoffRequest, timeoutMs: number): Promise<HandoffOutcome>;
  /**
   * The probe of a paused store: obtains credentials afresh (the ones refused are not reused) and makes one cheap
   * authenticated call. A destination that never pauses has none.
   */
  probe?(store: StoreRow, timeoutMs: number): Promise<LinkCheck>;
  /**
   * Pacing inside each store's budget on the platform: of the sends a store wants, how many may go now, and when
   * each of the others is due; one answer per store, in the order asked (a round's stores at once, in a constant
   * number of statements). A destination without a budget has none (everything goes).
   */
  pace?(wants: readonly { store: StoreRow; wanted: number }[]): Promise<{ granted: number; later: number[] }[]>;
}

/** What a platform needs of the runtime to send and probe: the platform links (tokens, budgets, pauses). */
export type PlatformCore = CoreWith<{ links: PlatformLinkStore }>;

/** What an event hands off: the trigger to start and its fields, built once per send; or why it never can be. */
export type Handoff =
  /** `fieldCounts`: what the endpoint's typed fields found, as the attempt records it (JSON, names only); null without fields. */
  | { ok: true; handle: string; payload: TriggerPayload; fieldCounts: string | null }
  | { ok: false; handle: string; code: 'SVC_PAYLOAD_TOO_LARGE'; errorClass: 'payload_too_large'; message: string }
  | { ok: false; handle: string; code: 'SVC_REQUIRED_PATH_MISSING'; errorClass: 'config'; message: string };

/** One item of setup state's checklist that the store's platform decides. */
export interface SetupCheck {
  done: boolean;
  text: string;
}

/** The checklist items setup state takes from the store's platform (src/ops/state.ts orders them among its own). */
export type PlatformChecks = Record<'destination_configured' | 'destination_reachable' | 'api_version_supported' | 'lifecycle_callback_verifiable', SetupCheck>;

/**
 * What a platform's pages need from the layers above it, handed in by the server (as the MCP endpoint receives its
 * pipeline): a platform folder imports neither src/ops/ nor src/relay/.
 */
export interface PlatformOps {
  /** A new store's row (src/ops/stores.ts, loaded when first asked), for an install that creates one. */
  newStoreRow(
    core: CoreWith<unknown>,
    shop: string,
    fields: Pick<StoreRow, 'plan' | 'destination' | 'adminTokenEnv' | 'credentialMode' | 'clientId' | 'clientSecretEnv'>,
  ): Promise<StoreRow>;
  /** The secrets serve holds (src/held-secrets.ts), redacted from what a merchant's workflow writes. */
  heldSecrets(core: Pick<Runtime, 'config' | 'box'>, stores: readonly Pick<StoreRow, 'clientSecretEnv' | 'adminTokenEnv'>[]): HeldSecrets;
}

/**
 * How src/server/app.ts guards a platform's route: `signed` for what the platform signs (a 401 counts against the
 * address), `install` for a page anyone opens (limited per address), `open` for neither.
 */
export type RouteGuard = { kind: 'signed'; name: string; audience: 'page' | 'json' } | { kind: 'install' } | { kind: 'open' };

/** One HTTP route of a platform, at an exact path; `methods` limits it (others fall through to not_found). */
export interface PlatformRoute {
  path: string;
  methods?: readonly string[];
  guard: RouteGuard;
  handle(req: Request): Promise<Response>;
}

/**
 * A workflow platform, as the relay, the ops and the server see it; src/platform/registry.ts holds one per
 * destination name and is the only file outside a platform's folder that imports it.
 */
export interface Platform {
  readonly name: DestinationName;
  /** The destination of this runtime (send, probe, pace): one per core, so its token cache and budget are shared. */
  destination(core: PlatformCore): Destination;
  /**
   * The trigger and fields an event hands off, built and size-checked once per send, or why it cannot be. `doc`:
   * the event's body, parsed, for an endpoint with typed fields or includeBody (undefined once it has expired).
   */
  handoff(
    endpoint: Pick<EndpointRow, 'triggerVariant' | 'sourceLabel'> & Partial<Pick<EndpointRow, 'fields' | 'includeBody' | 'requiredPaths'>>,
    event: EventRow,
    doc?: unknown,
  ): Handoff;
  /** At receipt, without building the fields when they are short: the code of an event that can never be handed off. */
  refusal(endpoint: Pick<EndpointRow, 'triggerVariant' | 'sourceLabel'>, event: EventRow): 'SVC_PAYLOAD_TOO_LARGE' | null;
  /** A resource id as the trigger's reference takes it (decimal), or null when it cannot be one. */
  resourceId(value: unknown): string | null;
  /**
   * Trigger readiness: by store, the handles of its triggers the platform reports without an enabled workflow (a
   * store with none is left out); the stores of a round in one read.
   */
  withoutWorkflow(repo: Pick<ReadinessStore, 'readinessOfStores'>, storeIds: readonly string[]): Promise<Map<string, Set<string>>>;
  /** Whether the platform starts the alert trigger (src/relay/alerts.ts skips a store whose platform does not). */
  readonly startsAlerts: boolean;
  /** The routes the platform answers; `ops` is what they need of the layers above. */
  routes(core: Core, ops: PlatformOps): PlatformRoute[];
  /** One line for serve's start and `hookrelay store show`: where events go, with the credentials' variable NAMES. */
  describeStore(store: StoreRow, env: (name: string) => string | undefined): string;
  /** Whether the store's credentials read a variable that is not set where serve runs (serve warns). */
  credentialVariableMissing(store: StoreRow, env: (name: string) => string | undefined): boolean;
  /** Refuses (AppError) a store row whose destination lacks what it needs (credentials). */
  checkStore(row: Pick<StoreRow, 'destination' | 'credentialMode' | 'adminTokenEnv' | 'clientId' | 'clientSecretEnv'>): void;
  /** Forgets what the runtime holds for the store (a token obtained with credentials now changed). */
  forget(core: PlatformCore, storeId: string): void;
  /** The live link as reads show it (null when nothing is sent), and setup state's platform checklist items. */
  linkState(core: PlatformCore, store: StoreRow, link: PlatformLinkRow | null): Promise<PlatformLinkState | null>;
  /** The store's credentials as `store show` prints them (mode, variable NAMES, token times; never a value). */
  credentialsView(store: StoreRow, link: PlatformLinkRow | null, env: (name: string) => string | undefined): PlatformLinkState['credentials'];
  /** The credential mode the store's columns say (null: none configured). */
  credentialMode(store: Pick<StoreRow, 'credentialMode' | 'adminTokenEnv'>): CredentialMode | null;
  /** The store's budget on the platform as the reliability read shows it, projected to `now`; null when none is known. */
  budgetView(link: PlatformLinkRow | null, now: number): PlatformLinkState['budget'];
  setupChecks(env: (name: string) => string | undefined, store: StoreRow, link: PlatformLinkState | null): PlatformChecks;
  /** Variables whose whole value is a secret of this platform's that serve may read (redacted wherever typed). */
  readonly secretEnv: readonly string[];
  /** Lines serve logs at start about the stores on this platform (warnings); empty when there are none. */
  startWarnings(stores: StoreRow[], env: (name: string) => string | undefined, now: number): string[];
}

/** A paid plan as a merchant chooses it: its price and limits, and the signed link that starts its subscription. */
export interface PlanChoice {
  plan: string;
  priceUsd: number;
  acceptedEventsPer30Days: number;
  replayExecutions: number;
  href: string;
}

/** Who an embedded page's ID token says is there: the shop, the staff user, the admin session. */
export interface EmbeddedIdentity {
  shop: string;
  staffUser: string;
  sessionId: string;
}

/** The app embedded in the platform's admin (the merchant's seat, face `embedded`): its ID tokens and managed install. */
export interface EmbeddedApp {
  /** The app's client id (the page's `shopify-api-key`), or null when the app is not configured. */
  clientId(): string | null;
  /** An ID token's identity when valid now; else why not (for the log; never the token). */
  verify(idToken: string): { ok: true; identity: EmbeddedIdentity } | { ok: false; why: string };
  /**
   * The store of a verified identity, installed: a shop this box has no token for is exchanged (token exchange),
   * created or brought back. `status` of a failure: 401 for a token the platform refused, 502/503 otherwise.
   */
  ensureInstalled(identity: EmbeddedIdentity, idToken: string): Promise<{ ok: true; store: StoreRow } | { ok: false; status: number; why: string }>;
}

/**
 * The platform this box is an app of (its install, billing and webhooks), whatever each store's destination: the
 * manifest's API version, setup state's billing link, and the app's secret variables.
 */
export interface AppPlatform {
  readonly secretEnv: readonly string[];
  apiVersion(now: number): ManifestPlatform['adminApiVersion'];
  billingLink(
    config: { env: (name: string) => string | undefined; appClientId: string | null },
    shopDomain: string,
  ): { billing: BillingMode; appBillingUrl: string };
  /**
   * The paid plans a merchant of `shop` may choose here, each behind a link this app signed (the app's subscription
   * flow: Shopify asks the merchant to approve the charge); empty when the box does not bill. Human-only: only the
   * merchant's seat shows them.
   */
  planChoices(core: Core, shop: string): Promise<PlanChoice[]>;
  /** serve's sweep once a minute: what the app received but has not processed yet (webhooks after a crash). */
  sweep(core: Core): Promise<unknown>;
  /** The app embedded in the admin (loaded on first use): ID tokens and managed install. */
  embedded(core: Core, ops: Pick<PlatformOps, 'newStoreRow'>): Promise<EmbeddedApp>;
}
