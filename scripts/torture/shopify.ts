/**
 * Part 7, shopify: what an outsider can do to a hosted app without the app's secret. Three stores install through
 * /auth/install on the fake Shopify host (billing on, Shopify's test charges), then:
 *
 * 1. floods: each unauthenticated path (GET /auth/install, GET /auth/callback with forged signatures, POST
 *    /shopify/webhooks, /flow/lifecycle and the Flow confirm action with forged HMACs, /hooks/<id> with bad
 *    signatures) from one address, every table's row count read before and after each path;
 * 2. the app's lifecycle as Shopify acts it out: a plan approved then cancelled, data requests, a customer redact,
 *    an uninstall (tokens revoked) and its shop/redact, every webhook signed and delivered by the fake;
 * 3. replays: every signed body hookrelay received, sent again with its valid signature under a new webhook id,
 *    under every other topic, and with every other store's X-Shopify-Shop-Domain; after each one that was taken, the
 *    stores' plans, retained bodies, records and install state are read again.
 *
 * Must be zero: plan changes, erasures, uninstalls and records caused by replays, rows written by unauthenticated
 * requests (less what the failed-authentication limiter keeps, `auth_failures`, and the `auth_failures` alert it
 * raises, both documented), 5xx answers.
 */
import { browse, FAKE_WEBHOOK_TOPICS, startFakeShopifyHost, type FakeHostWebhook, type FakeShopifyHost } from '../../test/fixtures/fake-shopify.ts';
import { api, flood, freePort, sign } from '../bench/_lib.ts';
import { Box, log } from './_box.ts';
import type { Rand } from './_rand.ts';

export interface ShopifyOptions {
  bin: string;
  rand: Rand;
  /** Requests per unauthenticated path. */
  floodEach: number;
  concurrency: number;
  keep: boolean;
}

/** One unauthenticated path flooded: answers, and rows each table gained (kept ones apart). */
export interface FloodedPath {
  path: string;
  /** Which finding of issue 35 a failure here is. */
  finding: string;
  sent: number;
  statuses: Record<string, number>;
  /** Rows added per table, less the excluded ones. */
  rowsAdded: Record<string, number>;
  /** Rows the limiter and its alert keep (auth_failures; alerts and alert_handoffs of kind auth_failures). */
  rowsExcluded: Record<string, number>;
  /** Log lines serve wrote meanwhile. */
  logLines: number;
}

/** One replay that changed something. */
export interface ReplayEffect {
  /** `<topic> body from <shop> sent as <topic> for <shop>`. */
  replay: string;
  change: string;
}

export interface ShopifyFigures {
  floods: FloodedPath[];
  /** Legitimate deliveries the fake made (topic for shop: status). */
  lifecycle: string[];
  /** Legitimate deliveries not answered 2xx at once. */
  lifecycleRefused: number;
  /** Lifecycle steps whose effect was not seen (a plan not moved, a body not erased): the replays would prove nothing. */
  lifecycleMissing: string[];
  replays: { sent: number; statuses: Record<string, number>; taken: number };
  planChanges: ReplayEffect[];
  erasures: ReplayEffect[];
  uninstalls: ReplayEffect[];
  /** Records (data requests, …) a replay wrote: a body taken for another topic's. */
  recordsCreated: ReplayEffect[];
  /** 5xx answers: floods and replays. */
  serverErrors: number;
}

const APP = { clientId: 'torture-app-client', clientSecret: 'torture-app-secret-canary-3b7e' };
const SHOPS = ['alpine-torture.myshopify.com', 'birch-torture.myshopify.com', 'cedar-torture.myshopify.com'] as const;
const [S1, S2, S3] = SHOPS;
const CUSTOMER = 7001;
const OTHER_CUSTOMER = 7002;
/** Tables whose rows the failed-authentication limiter keeps by design (README, "Failed authentication is limited"). */
const LIMITER_TABLES = new Set(['auth_failures']);

const count5xx = (s: Record<string, number>) =>
  Object.entries(s)
    .filter(([k]) => /^5\d\d$/.test(k))
    .reduce((t, [, v]) => t + v, 0);

export async function shopifyPart(o: ShopifyOptions): Promise<ShopifyFigures> {
  // The app's webhook URL is serve's: its port is chosen before either starts.
  const port = await freePort();
  const host = startFakeShopifyHost({ app: { ...APP, accessTokenTtlSeconds: 3600 }, webhookUrl: `http://127.0.0.1:${port}/shopify/webhooks` });
  const box = new Box({
    bin: o.bin,
    name: 'shopify',
    env: {
      HOOKRELAY_SHOPIFY_CLIENT_ID: APP.clientId,
      HOOKRELAY_SHOPIFY_APP_SECRET: APP.clientSecret,
      HOOKRELAY_BILLING: 'shopify-test',
      HOOKRELAY_SHOPIFY_ADMIN_URL: `${host.url}/{shop}`,
    },
  });
  box.port = port;
  box.base = `http://127.0.0.1:${port}`;
  try {
    await box.start();
    const tenants = new Map<string, Tenant>();
    const landing = new Map<string, string>();
    for (const shop of SHOPS) {
      const landed = await browse(`${box.base}/auth/install?shop=${shop}`);
      if (landed.status !== 200 || !landed.page.includes(`hookrelay is installed on ${shop}`)) throw new Error(`install on ${shop}: ${landed.status}`);
      landing.set(shop, landed.page);
      tenants.set(shop, await tenant(box, shop));
    }

    const floods = await floodAll(box, o, tenants.get(S1)!);

    const lifecycle = await actOutLifecycle(box, host, tenants, landing);
    const replays = await replayAll(box, host, lifecycle.delivered);
    return {
      floods,
      lifecycle: lifecycle.delivered.map((w) => `${w.topic} for ${w.shop}: ${w.attempts.map((a) => a.status ?? 'none').join(',')}`),
      lifecycleRefused: lifecycle.delivered.filter((w) => w.state !== 'delivered').length,
      lifecycleMissing: lifecycle.missing,
      replays: replays.summary,
      planChanges: replays.planChanges,
      erasures: replays.erasures,
      uninstalls: replays.uninstalls,
      recordsCreated: replays.recordsCreated,
      serverErrors: floods.reduce((t, f) => t + count5xx(f.statuses), 0) + count5xx(replays.summary.statuses),
    };
  } finally {
    await box.dispose(o.keep);
    await host.stop();
  }
}

interface Tenant {
  shop: string;
  storeId: string;
  endpointId: string;
  secret: string;
}

/** The store's agent (an operator grant) makes a customer endpoint. */
async function tenant(box: Box, shop: string): Promise<Tenant> {
  const token = box.issueGrant(shop, 'operator');
  const made = await api(box.base, token, 'POST', '/agent/v1/endpoints', {
    triggerVariant: 'customer',
    resourceIdPath: 'customer.id',
    name: 'torture customers',
  });
  const storeId = box.db((d) => d.query<{ id: string }, [string]>('SELECT id FROM stores WHERE shop_domain = ?').get(shop)!.id);
  return { shop, storeId, endpointId: made.data.endpoint.id, secret: made.data.secret };
}

async function sendEvent(box: Box, t: Tenant, customer: number, n: number): Promise<number> {
  const body = JSON.stringify({ event_type: 'customer.flagged', external_event_id: `${t.shop}-${customer}-${n}`, customer: { id: customer }, note: 'private' });
  const res = await fetch(`${box.base}/hooks/${t.endpointId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hookrelay-signature': sign(t.secret, body) },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

/** Row counts of every table. */
function tableCounts(box: Box): Record<string, number> {
  return box.db((d) => {
    const names = d
      .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_\\_%' ESCAPE '\\'")
      .all()
      .map((r) => r.name);
    return Object.fromEntries(names.map((n) => [n, d.query<{ n: number }, []>(`SELECT count(*) AS n FROM "${n}"`).get()!.n]));
  });
}
/** Rows of the auth_failures alert (raised by the limiter's counts) and its handoffs. */
function limiterAlertRows(box: Box): { alerts: number; alert_handoffs: number } {
  return box.db((d) => ({
    alerts: d.query<{ n: number }, []>("SELECT count(*) AS n FROM alerts WHERE kind = 'auth_failures'").get()!.n,
    alert_handoffs: d
      .query<{ n: number }, []>("SELECT count(*) AS n FROM alert_handoffs WHERE alert_id IN (SELECT id FROM alerts WHERE kind = 'auth_failures')")
      .get()!.n,
  }));
}

async function floodAll(box: Box, o: ShopifyOptions, t: Tenant): Promise<FloodedPath[]> {
  const hex = (n: number) => o.rand.chars(n, '0123456789abcdef');
  const b64 = () => Buffer.from(o.rand.chars(32, '0123456789abcdef'), 'hex').toString('base64');
  const json = { 'content-type': 'application/json' };
  const paths: { path: string; finding: string; request: (i: number) => Promise<Response> }[] = [
    {
      path: 'GET /auth/install',
      finding: 'finding 3: install state rows',
      request: (i) => fetch(`${box.base}/auth/install?shop=flood-${i % 50}.myshopify.com`, { redirect: 'manual' }),
    },
    {
      path: 'GET /auth/callback (forged)',
      finding: 'finding 6: forged callbacks',
      request: () =>
        fetch(`${box.base}/auth/callback?code=${hex(32)}&hmac=${hex(64)}&shop=${S1}&state=${hex(32)}&timestamp=${Math.floor(Date.now() / 1000)}`, {
          redirect: 'manual',
          headers: { cookie: `hookrelay_install=${hex(32)}` },
        }),
    },
    {
      path: 'POST /shopify/webhooks (forged)',
      finding: 'finding 6: forged webhooks',
      request: () =>
        fetch(`${box.base}/shopify/webhooks`, {
          method: 'POST',
          headers: {
            ...json,
            'x-shopify-topic': 'app/uninstalled',
            'x-shopify-hmac-sha256': b64(),
            'x-shopify-shop-domain': S1,
            'x-shopify-webhook-id': crypto.randomUUID(),
            'x-shopify-event-id': crypto.randomUUID(),
            'x-shopify-api-version': '2026-10',
            'x-shopify-triggered-at': new Date().toISOString(),
          },
          body: JSON.stringify({ id: 1, domain: S1, myshopify_domain: S1 }),
        }),
    },
    {
      path: 'POST /flow/lifecycle (forged)',
      finding: 'finding 6: forged Flow callbacks',
      request: () =>
        fetch(`${box.base}/flow/lifecycle`, {
          method: 'POST',
          headers: { ...json, 'x-shopify-hmac-sha256': b64() },
          body: JSON.stringify({
            flow_trigger_definition_id: 'hookrelay-customer',
            has_enabled_flow: false,
            shopify_domain: S1,
            timestamp: new Date().toISOString(),
          }),
        }),
    },
    {
      path: 'POST /flow/actions/confirm (forged)',
      finding: 'finding 6: forged Flow action runs',
      request: () =>
        fetch(`${box.base}/flow/actions/confirm`, {
          method: 'POST',
          headers: { ...json, 'x-shopify-hmac-sha256': b64() },
          body: JSON.stringify({ action_run_id: crypto.randomUUID(), shopify_domain: S1, properties: { event_id: 'evt_0', outcome: 'done' } }),
        }),
    },
    {
      path: 'POST /hooks/<id> (bad signatures)',
      finding: 'the /hooks limiter',
      request: () =>
        fetch(`${box.base}/hooks/${t.endpointId}`, {
          method: 'POST',
          headers: { ...json, 'x-hookrelay-signature': hex(64) },
          body: JSON.stringify({ event_type: 'torture.flood', customer: { id: 1 } }),
        }),
    },
  ];
  const out: FloodedPath[] = [];
  for (const p of paths) {
    await Bun.sleep(300); // the group commit's last batch of the step before
    const before = tableCounts(box);
    const alertsBefore = limiterAlertRows(box);
    const linesBefore = box.serverLog().split('\n').length;
    const statuses = (await flood(o.floodEach, o.concurrency, p.request)).answers;
    await Bun.sleep(600);
    const after = tableCounts(box);
    const alertsAfter = limiterAlertRows(box);
    const rowsAdded: Record<string, number> = {};
    const rowsExcluded: Record<string, number> = {};
    for (const [table, n] of Object.entries(after)) {
      let added = n - (before[table] ?? 0);
      let excluded = 0;
      if (LIMITER_TABLES.has(table)) {
        excluded = added;
        added = 0;
      }
      if (table === 'alerts' || table === 'alert_handoffs') {
        excluded = Math.min(added, alertsAfter[table] - alertsBefore[table]);
        added -= excluded;
      }
      if (added) rowsAdded[table] = added;
      if (excluded) rowsExcluded[table] = excluded;
    }
    out.push({
      path: p.path,
      finding: p.finding,
      sent: o.floodEach,
      statuses,
      rowsAdded,
      rowsExcluded,
      logLines: box.serverLog().split('\n').length - linesBefore,
    });
    log(`shopify: flooded ${p.path}: ${JSON.stringify(statuses)}, rows ${JSON.stringify(rowsAdded)}`);
  }
  return out;
}

/** Waits until every recorded Shopify webhook is processed (or has failed a run), at most `ms`. */
async function settled(box: Box, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const open = box.db(
      (d) => d.query<{ n: number }, []>('SELECT count(*) AS n FROM shopify_webhooks WHERE processed_at IS NULL AND last_error IS NULL').get()!.n,
    );
    if (open === 0) return;
    await Bun.sleep(30);
  }
}
/** Waits until the store's events are handed off (none accepted or queued), at most `ms`. */
async function drained(box: Box, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const open = box.db((d) => d.query<{ n: number }, []>("SELECT count(*) AS n FROM events WHERE outcome IN ('accepted', 'queued')").get()!.n);
    if (open === 0) return;
    await Bun.sleep(50);
  }
}

/**
 * What Shopify and the merchants do, each step delivered signed by the fake: alpine chooses growth and approves it
 * (ACTIVE), then it is cancelled (CANCELLED); data requests on alpine and birch; a customer redact on birch; cedar
 * uninstalls (tokens revoked, app/uninstalled) and its shop/redact comes. Every store has events about CUSTOMER and
 * OTHER_CUSTOMER first.
 */
async function actOutLifecycle(box: Box, host: FakeShopifyHost, tenants: Map<string, Tenant>, landing: Map<string, string>) {
  for (const t of tenants.values()) {
    for (let n = 0; n < 3; n++) await sendEvent(box, t, CUSTOMER, n);
    for (let n = 0; n < 2; n++) await sendEvent(box, t, OTHER_CUSTOMER, n);
  }
  await drained(box);

  // alpine's merchant follows the growth link on the install page; hookrelay asks Shopify for the subscription.
  const link = /href="([^"]*\/billing\/subscribe\?[^"]*plan=growth[^"]*)"/
    .exec(landing.get(S1)!)?.[1]
    ?.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replaceAll('&amp;', '&');
  if (!link) throw new Error('no growth link on the install page (is HOOKRELAY_BILLING on?)');
  const chose = await fetch(link, { redirect: 'manual' });
  await chose.arrayBuffer();
  const sub = host.shop(S1).subscriptions.at(-1);
  if (chose.status !== 302 || !sub) throw new Error(`choosing growth: ${chose.status}, no subscription on the fake`);
  // Each step must have had its effect, or replaying its body would prove nothing.
  const missing: string[] = [];
  const expectThat = (ok: boolean, step: string) => {
    if (!ok) missing.push(step);
  };
  const start = snapshot(box);
  await host.sendWebhook(S1, 'app_subscriptions/update', { payload: host.shop(S1).approveSubscription(sub.id) });
  await settled(box);
  expectThat(snapshot(box).plan.get(S1)?.startsWith('growth/') === true, `${S1} on growth after its approval`);
  // The merchant cancels it in their admin.
  await host.sendWebhook(S1, 'app_subscriptions/update', { payload: host.shop(S1).cancelSubscription(sub.id) });
  await host.sendWebhook(S1, 'customers/data_request', { customer: CUSTOMER });
  await host.sendWebhook(S2, 'customers/data_request', { customer: CUSTOMER });
  await host.sendWebhook(S2, 'customers/redact', { customer: OTHER_CUSTOMER });
  await host.uninstall(S3);
  await settled(box);
  const mid = snapshot(box);
  expectThat(mid.plan.get(S1)?.startsWith('free/') === true, `${S1} back on free after the cancel`);
  expectThat((mid.records.get(S1)?.size ?? 0) > 0 && (mid.records.get(S2)?.size ?? 0) > 0, 'the data requests recorded');
  expectThat((mid.retained.get(S2) ?? 0) < (start.retained.get(S2) ?? 0), `${S2}: the customer's bodies erased by customers/redact`);
  expectThat(mid.uninstalled.get(S3) === true, `${S3} uninstalled`);
  await host.sendWebhook(S3, 'shop/redact');
  await settled(box);
  expectThat((snapshot(box).retained.get(S3) ?? 0) === 0 && (start.retained.get(S3) ?? 0) > 0, `${S3}: its bodies erased by shop/redact`);
  const delivered = [...host.webhooks].filter((w) => w.attempts.length > 0);
  log(`shopify: lifecycle: ${delivered.map((w) => `${w.topic}@${w.shop.split('.')[0]}=${w.attempts.at(-1)?.status}`).join(' ')}`);
  if (missing.length) log(`shopify: lifecycle steps without their effect: ${missing.join('; ')}`);
  return { delivered, missing };
}

interface Snapshot {
  plan: Map<string, string>;
  retained: Map<string, number>;
  /** Record ids (support requests, data requests, …) per shop. */
  records: Map<string, Set<string>>;
  uninstalled: Map<string, boolean>;
}
function snapshot(box: Box): Snapshot {
  return box.db((d) => {
    const stores = d
      .query<{ id: string; shop_domain: string; plan: string; billing_status: string; uninstalled_at: number | null }, []>(
        'SELECT id, shop_domain, plan, billing_status, uninstalled_at FROM stores',
      )
      .all();
    const per = (sql: string) =>
      new Map(
        d
          .query<{ store_id: string; n: number }, []>(sql)
          .all()
          .map((r) => [r.store_id, r.n]),
      );
    const retained = per("SELECT store_id, count(*) AS n FROM events WHERE body_retention = 'retained' GROUP BY store_id");
    const records = new Map<string, Set<string>>();
    for (const r of d.query<{ store_id: string; id: string }, []>('SELECT store_id, id FROM records').all()) {
      const ids = records.get(r.store_id) ?? new Set<string>();
      ids.add(r.id);
      records.set(r.store_id, ids);
    }
    const s: Snapshot = { plan: new Map(), retained: new Map(), records: new Map(), uninstalled: new Map() };
    for (const r of stores) {
      s.plan.set(r.shop_domain, `${r.plan}/${r.billing_status}`);
      s.retained.set(r.shop_domain, retained.get(r.id) ?? 0);
      s.records.set(r.shop_domain, records.get(r.id) ?? new Set());
      s.uninstalled.set(r.shop_domain, r.uninstalled_at !== null);
    }
    return s;
  });
}

/** Every delivered body again, with its valid signature: same topic and shop under a new id, every other topic, every other shop. */
async function replayAll(box: Box, host: FakeShopifyHost, delivered: FakeHostWebhook[]) {
  const statuses: Record<string, number> = {};
  const planChanges: ReplayEffect[] = [];
  const erasures: ReplayEffect[] = [];
  const uninstalls: ReplayEffect[] = [];
  const recordsCreated: ReplayEffect[] = [];
  /** The records the lifecycle left: erasing one of these is an erasure; a record a replay made is counted apart. */
  const baseline = snapshot(box).records;
  let sent = 0;
  let taken = 0;
  const short = (shop: string) => shop.replace('.myshopify.com', '');
  for (const w of delivered) {
    for (const topic of FAKE_WEBHOOK_TOPICS) {
      for (const shop of SHOPS) {
        const before = snapshot(box);
        const res = await host.resend(w, { topic, shop }).catch(() => null);
        sent++;
        const key = res ? String(res.status) : 'network';
        statuses[key] = (statuses[key] ?? 0) + 1;
        if (res?.status !== 200 || !res.body.includes('"received"')) continue;
        taken++;
        await settled(box, 5_000);
        const after = snapshot(box);
        const what = `${w.topic} body from ${short(w.shop)} sent as ${topic} for ${short(shop)}`;
        for (const s of SHOPS) {
          if (before.plan.get(s) !== after.plan.get(s))
            planChanges.push({ replay: what, change: `${short(s)} plan ${before.plan.get(s)} → ${after.plan.get(s)}` });
          const bodies = (before.retained.get(s) ?? 0) - (after.retained.get(s) ?? 0);
          const had = before.records.get(s) ?? new Set<string>();
          const has = after.records.get(s) ?? new Set<string>();
          const records = [...had].filter((id) => baseline.get(s)?.has(id) && !has.has(id)).length;
          const made = [...has].filter((id) => !had.has(id)).length;
          if (bodies > 0 || records > 0) erasures.push({ replay: what, change: `${short(s)}: ${bodies} event bodies and ${records} records erased` });
          if (made > 0) {
            const why = topic === w.topic ? 'the same request under a new webhook id' : 'finding 2, a body taken for another topic';
            recordsCreated.push({ replay: what, change: `${short(s)}: ${made} records written (${why})` });
          }
          if (!before.uninstalled.get(s) && after.uninstalled.get(s)) uninstalls.push({ replay: what, change: `${short(s)} marked uninstalled` });
        }
      }
    }
  }
  log(
    `shopify: replayed ${sent} (${taken} taken): ${planChanges.length} plan changes, ${erasures.length} erasures, ${uninstalls.length} uninstalls, ${recordsCreated.length} records written`,
  );
  return { summary: { sent, statuses, taken }, planChanges, erasures, uninstalls, recordsCreated };
}
