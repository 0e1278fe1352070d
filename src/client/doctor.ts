/** `hookrelay doctor`: named checks of a configuration against a server, each ok or failed with a hint. */
import { EXIT } from '../contract/errors.ts';
import { linkCheckAdvice } from '../contract/platform.ts';
import type { z } from 'zod';
import { AgentOperationsManifestSchema, AgentGrantIntrospectionReadSchema, type SetupStateSchema } from '../contract/schemas.ts';
import { API_PREFIX, EDITION, OPENAPI_PATH, OPENAPI_VERSION, SCHEMA_VERSION } from '../contract/scopes.ts';
import { EXPECTED_FIELDS, requireToken, type ResolvedConfig } from './config.ts';
import { ClientError } from './errors.ts';
import type { HookrelayClient } from './http.ts';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
  /** Not run because an earlier check failed. */
  skipped?: boolean;
}

export interface DoctorReport {
  ok: boolean;
  summary: string;
  checks: Check[];
  /** 0 when every check passed; else 7 when the server is unreachable, 3 for grant or context, 1 otherwise. */
  exitCode: number;
}

/** Allowed difference between the server's Date header and the local clock. */
const MAX_CLOCK_SKEW_SECONDS = 30;

const pass = (name: string, detail: string, hint?: string): Check => ({ name, ok: true, detail, ...(hint ? { hint } : {}) });
const fail = (name: string, detail: string, hint: string): Check => ({ name, ok: false, detail, hint });
const skip = (name: string, because: string): Check => ({ name, ok: false, skipped: true, detail: `skipped: ${because}`, hint: `Fix ${because} first.` });

function describeError(err: unknown): string {
  if (err instanceof ClientError) return `${err.code}${err.status ? ` (HTTP ${err.status})` : ''}: ${err.message}`;
  if (err instanceof Error) return err.message;
  return 'unknown error';
}

function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function duration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return h > 0 ? `${h}h ${m}m` : `${m}m ${seconds % 60}s`;
}

/** Runs every check in order; later checks that depend on an earlier one are skipped when it failed. */
export async function runDoctor(client: HookrelayClient, config: ResolvedConfig): Promise<DoctorReport> {
  const checks: Check[] = [];
  const base = client.baseUrl;

  // 1. Base URL reachable (any HTTP answer from /status counts), and the clock sample for check 8.
  let statusAnswer: Awaited<ReturnType<HookrelayClient['getPublic']>> | null = null;
  try {
    statusAnswer = await client.getPublic('/status');
    const body = jsonOf(statusAnswer.body) as { status?: string } | null;
    checks.push(
      statusAnswer.status === 200
        ? pass('base_url_reachable', `${base} answered /status: ${body?.status ?? 'ok'} (base URL from ${config.baseUrl.from}).`)
        : fail(
            'base_url_reachable',
            `${base}/status answered HTTP ${statusAnswer.status}${body?.status ? ` (${body.status})` : ''}.`,
            'The server is up but not healthy; check its stderr log.',
          ),
    );
  } catch (err) {
    checks.push(
      fail('base_url_reachable', `${base}: ${describeError(err)}`, `Start the server (hookrelay serve) or fix the base URL (from ${config.baseUrl.from}).`),
    );
  }
  const reachable = statusAnswer !== null;

  // 2. Manifest readable, 3. edition identity.
  let manifest: ReturnType<typeof AgentOperationsManifestSchema.parse> | null = null;
  if (!reachable) {
    checks.push(skip('manifest_readable', 'base_url_reachable'));
    checks.push(skip('edition_identity', 'base_url_reachable'));
  } else {
    try {
      const res = await client.getPublic(`${API_PREFIX}/manifest`);
      const parsed = AgentOperationsManifestSchema.safeParse(jsonOf(res.body));
      if (res.status !== 200)
        checks.push(
          fail('manifest_readable', `${API_PREFIX}/manifest answered HTTP ${res.status}.`, 'Is this a hookrelay server, and is the base URL its root?'),
        );
      else if (!parsed.success)
        checks.push(
          fail('manifest_readable', 'The manifest does not match the contract schema.', 'Server and CLI versions may differ; upgrade the older one.'),
        );
      else {
        manifest = parsed.data;
        const served = manifest.operations.filter((o) => o.available).length;
        const elsewhere = !manifest.docs.manifest.startsWith(base);
        checks.push(
          pass(
            'manifest_readable',
            `${served} of ${manifest.operations.length} operations served.`,
            elsewhere
              ? `The manifest advertises ${manifest.docs.manifest.replace(/\/agent\/v1\/manifest$/, '')} as its public URL (HOOKRELAY_PUBLIC_URL); this CLI uses ${base}.`
              : undefined,
          ),
        );
      }
    } catch (err) {
      checks.push(fail('manifest_readable', describeError(err), 'Check the base URL points at the hookrelay server root.'));
    }
    if (!manifest) checks.push(skip('edition_identity', 'manifest_readable'));
    else {
      const e = manifest.edition;
      const same = e.platformKey === EDITION.platformKey && e.editionKey === EDITION.editionKey;
      const schemaOk = manifest.schemaVersion === SCHEMA_VERSION;
      checks.push(
        same && schemaOk
          ? pass('edition_identity', `${e.name} (${e.platformKey}/${e.editionKey}), schema ${manifest.schemaVersion}.`)
          : fail(
              'edition_identity',
              `Server is ${e.platformKey}/${e.editionKey} schema ${manifest.schemaVersion}; this CLI speaks ${EDITION.platformKey}/${EDITION.editionKey} schema ${SCHEMA_VERSION}.`,
              'Use a CLI built for this server edition and schema version.',
            ),
      );
    }
  }

  // 4. OpenAPI reachable and its version.
  if (!reachable) checks.push(skip('openapi_reachable', 'base_url_reachable'));
  else {
    try {
      const res = await client.getPublic(OPENAPI_PATH);
      const doc = jsonOf(res.body) as { openapi?: string; info?: { version?: string } } | null;
      if (res.status !== 200 || !doc)
        checks.push(
          fail('openapi_reachable', `${OPENAPI_PATH} answered HTTP ${res.status}.`, 'The server should publish its OpenAPI description; check its version.'),
        );
      else if (doc.openapi !== OPENAPI_VERSION || doc.info?.version !== SCHEMA_VERSION) {
        checks.push(
          fail(
            'openapi_reachable',
            `OpenAPI ${doc.openapi ?? '?'} schema version ${doc.info?.version ?? '?'}; expected ${OPENAPI_VERSION} / ${SCHEMA_VERSION}.`,
            'Server and CLI speak different contract versions; upgrade the older one.',
          ),
        );
      } else checks.push(pass('openapi_reachable', `OpenAPI ${doc.openapi}, schema version ${doc.info.version}.`));
    } catch (err) {
      checks.push(fail('openapi_reachable', describeError(err), 'Check the server is reachable and healthy.'));
    }
  }

  // 5. Human docs reachable.
  if (!reachable) checks.push(skip('docs_reachable', 'base_url_reachable'));
  else {
    try {
      const res = await client.getPublic('/docs');
      checks.push(
        res.status === 200 && res.contentType.includes('text/html')
          ? pass('docs_reachable', `${base}/docs answered.`)
          : fail(
              'docs_reachable',
              `/docs answered HTTP ${res.status} (${res.contentType || 'no content type'}).`,
              'The server should serve its human docs at /docs.',
            ),
      );
    } catch (err) {
      checks.push(fail('docs_reachable', describeError(err), 'Check the server is reachable and healthy.'));
    }
  }

  // 6. Grant valid, 7. expected context matches.
  let store: { platformKey: string; platformAccountId: string; shopDomain: string; installationId: string } | null = null;
  let grantExit: number = EXIT.auth;
  if (!reachable) checks.push(skip('grant_valid', 'base_url_reachable'));
  else if (!config.token.value) {
    let message = 'no token';
    try {
      requireToken(config);
    } catch (err) {
      message = (err as Error).message;
    }
    checks.push(fail('grant_valid', message, 'Export the grant token (hookrelay grant issue prints it once) in the variable your configuration names.'));
  } else {
    try {
      const res = await client.call('getCurrentAgentGrant', { withoutExpectedContext: true });
      const parsed = AgentGrantIntrospectionReadSchema.safeParse(res.body.data);
      if (!parsed.success) {
        checks.push(fail('grant_valid', 'The grant introspection does not match the contract schema.', 'Server and CLI versions may differ.'));
        grantExit = EXIT.error;
      } else {
        const { grant } = parsed.data;
        store = parsed.data.store;
        const soon = grant.expiresInSeconds < 15 * 60;
        checks.push(
          pass(
            'grant_valid',
            `${grant.tier} grant ${grant.id} (${grant.label}) for ${store.shopDomain}; expires ${grant.expiresAt} (in ${duration(grant.expiresInSeconds)}); scopes: ${grant.scopes.join(', ')}. Token from ${config.token.from}.`,
            soon ? 'The grant expires within 15 minutes; ask the merchant for a new one before long work.' : undefined,
          ),
        );
      }
    } catch (err) {
      if (err instanceof ClientError && err.exitCode !== EXIT.auth) grantExit = err.exitCode;
      checks.push(
        fail('grant_valid', describeError(err), `Token from ${config.token.from}. Ask the merchant for a valid, unexpired grant (hookrelay grant issue).`),
      );
    }
  }

  const configured = EXPECTED_FIELDS.filter((f) => config.expected[f.key] !== undefined);
  if (!store) checks.push(skip('expected_context', 'grant_valid'));
  else if (configured.length === 0) {
    checks.push(
      pass(
        'expected_context',
        'No expected context configured.',
        `Set expectedShopDomain (and the others) in the profile so a token for another store is refused; this grant is for ${store.shopDomain}.`,
      ),
    );
  } else {
    const mismatches = configured.filter((f) => config.expected[f.key]!.value !== store![f.key]);
    if (mismatches.length) {
      checks.push(
        fail(
          'expected_context',
          mismatches
            .map((f) => `${f.header}: expected ${config.expected[f.key]!.value} (from ${config.expected[f.key]!.from}), the grant has ${store![f.key]}`)
            .join('; '),
          'The token belongs to another platform, account, store or installation: use the right token or fix the expected values.',
        ),
      );
    } else {
      try {
        await client.call('getCurrentAgentGrant');
        checks.push(pass('expected_context', `${configured.map((f) => `${f.header} = ${store![f.key]}`).join(', ')}; the server agrees.`));
      } catch (err) {
        checks.push(fail('expected_context', describeError(err), 'The server refused the expected-context headers.'));
      }
    }
  }

  // 8. Clock skew from the Date header of the /status answer.
  if (!statusAnswer) checks.push(skip('clock_skew', 'base_url_reachable'));
  else if (!statusAnswer.date) checks.push(fail('clock_skew', 'The server sent no Date header.', 'A proxy may strip it; compare clocks by hand.'));
  else {
    const skew = Math.round((statusAnswer.date.getTime() - statusAnswer.localMidpoint) / 1000);
    checks.push(
      Math.abs(skew) <= MAX_CLOCK_SKEW_SECONDS
        ? pass('clock_skew', `Local clock within ${Math.max(1, Math.abs(skew))} s of the server (Date header).`)
        : fail(
            'clock_skew',
            `Local clock is ${Math.abs(skew)} s ${skew > 0 ? 'behind' : 'ahead of'} the server.`,
            'Sync the clock (NTP): grant expiry, confirmation expiry and Retry-After are server times.',
          ),
    );
  }

  // 9-11. From setup state: Flow's lifecycle callback (the app secret on the server), the destination checked live
  // with the store's credentials, and the platform API version's window of support.
  const contextOk = checks.some((c) => c.name === 'expected_context' && c.ok);
  const SETUP_CHECKS = ['lifecycle_callback', 'shopify_destination', 'shopify_api_version'];
  if (!contextOk) for (const name of SETUP_CHECKS) checks.push(skip(name, store ? 'expected_context' : 'grant_valid'));
  else {
    try {
      const setup = (await client.call('getSetupState')).body.data;
      const item = setup.checklist.find((c) => c.item === 'lifecycle_callback_verifiable');
      checks.push(
        !item || item.done
          ? pass(
              'lifecycle_callback',
              item ? 'The server can verify Flow lifecycle callbacks (or the store hands off to log).' : 'The server does not report it.',
            )
          : fail('lifecycle_callback', item.text, 'Set HOOKRELAY_SHOPIFY_APP_SECRET to the app client secret where hookrelay serve runs, then restart it.'),
      );
      checks.push(destinationCheck(setup, base), apiVersionCheck(setup));
    } catch (err) {
      checks.push(fail('lifecycle_callback', describeError(err), 'The grant needs setup:read to read setup state.'));
      for (const name of SETUP_CHECKS.slice(1)) checks.push(skip(name, 'lifecycle_callback'));
    }
  }

  // 12. The server's operator settings and their precedence (plan usage shows them), for whoever debugs a limit.
  if (!contextOk) checks.push(skip('server_settings', store ? 'expected_context' : 'grant_valid'));
  else {
    try {
      const { settings } = (await client.call('getPlanUsage')).body.data;
      const set = settings.values.filter((v) => v.source !== 'default');
      const from = set.length ? set.map((v) => `${v.key} = ${v.value} (${v.source})`).join('; ') : 'every setting at its default';
      checks.push(pass('server_settings', `${from}. Precedence: ${settings.precedence}.`));
    } catch (err) {
      checks.push(fail('server_settings', describeError(err), 'Plan usage needs a grant with setup:read.'));
    }
  }

  const failed = checks.filter((c) => !c.ok);
  const byName = (n: string) => failed.some((c) => c.name === n && !c.skipped);
  const exitCode =
    failed.length === 0 ? EXIT.ok : !reachable ? EXIT.unreachable : byName('grant_valid') ? grantExit : byName('expected_context') ? EXIT.auth : EXIT.error;
  return { ok: failed.length === 0, summary: `${checks.length - failed.length} of ${checks.length} checks passed.`, checks, exitCode };
}

type SetupState = z.infer<typeof SetupStateSchema>;

/** The destination, checked live with the store's current credentials (a `shop` query); fails while the handoff is paused. */
function destinationCheck(setup: SetupState, base: string): Check {
  const p = setup.platform;
  // The install link of an advice: this base URL (the server's, as doctor reaches it) and the store's shop.
  const where = { publicUrl: base, shopDomain: setup.store.shopDomain };
  if (!p) return pass('shopify_destination', 'The store hands off to the log destination: nothing is sent to Shopify.');
  const creds = p.credentials;
  const token = creds.token?.expiresAt ? `, token valid until ${creds.token.expiresAt}` : '';
  if (setup.handoff.state === 'paused') {
    return fail(
      'shopify_destination',
      `Handoff to Shopify is paused since ${setup.handoff.since} (${setup.handoff.code}): ${setup.handoff.message ?? ''} Events wait; none fail. Live check: ${p.check.result}.`,
      setup.handoff.recommendedAction ?? linkCheckAdvice(p.check.result, where) ?? 'See hookrelay store show.',
    );
  }
  if (p.check.result === 'ok') return pass('shopify_destination', `Shopify accepted the store's credentials (${creds.mode}${token}). ${p.check.message}`);
  return fail(
    'shopify_destination',
    `Shopify check: ${p.check.result}${p.check.httpStatus ? ` (HTTP ${p.check.httpStatus})` : ''}. ${p.check.message}`,
    linkCheckAdvice(p.check.result, where) ?? 'See hookrelay store show.',
  );
}

/** The Admin API version asked for: warns within 90 days of its end of support, fails after; warns on a fall-forward. */
function apiVersionCheck(setup: SetupState): Check {
  const p = setup.platform;
  if (!p) return pass('shopify_api_version', 'No Shopify API is called with the log destination.');
  const v = p.apiVersion;
  const detail = `Admin API ${v.version}, supported until ${v.supportedUntil} (${v.daysLeft} days).`;
  if (v.status === 'unsupported')
    return fail(
      'shopify_api_version',
      `${detail} Past its end of support: Shopify answers with another version.`,
      'Upgrade hookrelay to a release that speaks a supported Admin API version.',
    );
  const fellForward =
    p.answeredApiVersion && p.answeredApiVersion !== v.version ? ` Shopify answered with ${p.answeredApiVersion}: it no longer serves ${v.version}.` : '';
  const hint = v.status === 'ending_soon' || fellForward ? `Upgrade hookrelay before ${v.supportedUntil}.${fellForward}` : undefined;
  return pass('shopify_api_version', `${detail}${p.answeredApiVersion ? ` Shopify last answered with ${p.answeredApiVersion}.` : ''}`, hint);
}
