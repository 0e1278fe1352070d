/**
 * The fake Shopify Admin API (test/fixtures/fake-shopify.ts) as its own process, for trying hookrelay without a
 * Shopify store: the client credentials grant, installs (the authorize page, code exchange, refresh),
 * flowTriggerReceive, `query { shop { … } currentAppInstallation { … } }` and appSubscriptionCreate on 127.0.0.1,
 * for any number of shops (startFakeShopifyHost), and the app's lifecycle: uninstall with token revocation, signed
 * webhooks delivered to --webhook-url with Shopify's retries.
 *
 *   bun scripts/fake-shopify.ts --client-id ID --client-secret SECRET [--port N] [--webhook-url URL] [--token STATIC]
 *                               [--bucket-max N --restore-rate N] [--token-ttl SECONDS] [--shop DOMAIN]
 *
 * Each shop is at `/{shop}/…` (HOOKRELAY_SHOPIFY_ADMIN_URL=http://127.0.0.1:PORT/{shop}), made on first use;
 * unprefixed paths reach --shop (default hookrelay-dev.myshopify.com), for one store as before. --webhook-url is the
 * app's webhook address (`…/shopify/webhooks`): app/uninstalled, shop/redact (48 hours after an uninstall) and
 * the webhooks sent on request go there; retries and scheduled deliveries are sent once a second when due.
 * Acting as the merchant and as Shopify (JSON answers):
 *
 *   curl -X POST 'http://127.0.0.1:PORT/_fake/uninstall?shop=D'                  # revokes D's tokens, sends app/uninstalled
 *   curl -X POST 'http://127.0.0.1:PORT/_fake/webhook?shop=D&topic=shop/redact'  # any subscribed topic, now
 *   curl 'http://127.0.0.1:PORT/_fake/shops'                                     # each shop's state and deliveries
 *
 * The secrets may come from the environment instead of the command line (where `ps` shows them):
 * FAKE_SHOPIFY_CLIENT_SECRET, FAKE_SHOPIFY_TOKEN. Prints `{"ready":true,"url":…,"pid":…}` on stdout, one line per
 * request on stderr (method, path, status; never a token or secret), and on SIGTERM/SIGINT the counts, then exits 0.
 */
import { parseArgs } from 'node:util';
import { startFakeShopifyHost, type FakeShopifyHostOptions } from '../test/fixtures/fake-shopify.ts';

const USAGE =
  'usage: bun scripts/fake-shopify.ts --client-id ID --client-secret SECRET [--port N] [--webhook-url URL] [--token STATIC] [--bucket-max N --restore-rate N] [--token-ttl SECONDS] [--shop DOMAIN]';

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

/** A whole number ≥ min from a flag, or undefined when the flag is absent. */
function integer(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) fail(`--${name} must be a whole number >= ${min}`);
  return n;
}

/** The command line's flags; a wrong one fails with the parser's message. */
function parseFlags() {
  try {
    return parseArgs({
      options: {
        'client-id': { type: 'string' },
        'client-secret': { type: 'string' },
        port: { type: 'string' },
        token: { type: 'string' },
        'bucket-max': { type: 'string' },
        'restore-rate': { type: 'string' },
        'token-ttl': { type: 'string' },
        shop: { type: 'string' },
        'webhook-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
}
const values = parseFlags();
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

const clientId = values['client-id'];
const clientSecret = values['client-secret'] ?? process.env.FAKE_SHOPIFY_CLIENT_SECRET;
if (!clientId) fail('--client-id is required');
if (!clientSecret) fail('--client-secret (or FAKE_SHOPIFY_CLIENT_SECRET) is required');
const bucketMax = integer('bucket-max', values['bucket-max'], 1);
const restoreRate = integer('restore-rate', values['restore-rate'], 0);
if ((bucketMax === undefined) !== (restoreRate === undefined)) fail('--bucket-max and --restore-rate go together');
const shop = values.shop?.trim().toLowerCase();
if (shop !== undefined && !/^[a-z0-9][a-z0-9-]*\.myshopify\.com$/.test(shop)) fail('--shop must be a store domain like your-store.myshopify.com');

const webhookUrl = values['webhook-url'];
if (webhookUrl !== undefined && !/^https?:\/\/[^/]/.test(webhookUrl)) fail('--webhook-url must be an http(s) URL, e.g. http://127.0.0.1:8787/shopify/webhooks');

const stamp = () => new Date().toISOString();
const opts: FakeShopifyHostOptions = {
  app: { clientId, clientSecret, tokenTtlSeconds: integer('token-ttl', values['token-ttl'], 1) },
  port: integer('port', values.port, 0) ?? 0,
  token: values.token ?? process.env.FAKE_SHOPIFY_TOKEN,
  bucket: bucketMax !== undefined && restoreRate !== undefined ? { maximumAvailable: bucketMax, restoreRate } : undefined,
  defaultShop: shop !== undefined ? { domain: shop, name: shop.replace(/\.myshopify\.com$/, '') } : undefined,
  webhookUrl,
  onReply: ({ method, path, status }) => process.stderr.write(`${stamp()} ${method} ${path} ${status}\n`),
  onAttempt: ({ topic, shop, webhookId, attempt, status }) =>
    process.stderr.write(`${stamp()} webhook ${topic} for ${shop} ${webhookId} attempt ${attempt}: ${status ?? 'no answer'}\n`),
};

const host = startFakeShopifyHost(opts);
// Retries and the shop/redact due 48 hours after an uninstall go out once their time has come.
let ticking = false;
const tick = setInterval(() => {
  if (ticking) return;
  ticking = true;
  host.deliverDue().finally(() => (ticking = false));
}, 1000);
process.stdout.write(`${JSON.stringify({ ready: true, url: host.url, pid: process.pid })}\n`);
await new Promise<void>((r) => process.once('SIGTERM', () => r()).once('SIGINT', () => r()));
clearInterval(tick);
const shops = host.shops();
const sum = (f: (s: (typeof shops)[number]) => number) => shops.reduce((t, s) => t + f(s), 0);
process.stdout.write(
  `${JSON.stringify({
    shops: shops.length,
    requests: sum((s) => host.shop(s.domain).requests.length),
    shopQueries: sum((s) => host.shop(s.domain).shopQueries.length),
    tokenRequests: sum((s) => host.shop(s.domain).tokenRequests.length),
    webhooks: host.webhooks.length,
  })}\n`,
);
await host.stop();
process.exit(0);
