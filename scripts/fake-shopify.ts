/**
 * The fake Shopify Admin API (test/fixtures/fake-shopify.ts) as its own process, for trying hookrelay without a
 * Shopify store: the client credentials grant, installs (the authorize page, code exchange, refresh),
 * flowTriggerReceive, `query { shop { … } currentAppInstallation { … } }` and appSubscriptionCreate on 127.0.0.1.
 *
 *   bun scripts/fake-shopify.ts --client-id ID --client-secret SECRET [--port N] [--token STATIC]
 *                               [--bucket-max N --restore-rate N] [--token-ttl SECONDS] [--shop DOMAIN]
 *
 * --shop names the store it is (default hookrelay-dev.myshopify.com): the shop installs redirect with and
 * `shop { myshopifyDomain }` answers.
 *
 * The secrets may come from the environment instead of the command line (where `ps` shows them):
 * FAKE_SHOPIFY_CLIENT_SECRET, FAKE_SHOPIFY_TOKEN. Prints `{"ready":true,"url":…,"pid":…}` on stdout, one line per
 * request on stderr (method, path, status; never a token or secret), and on SIGTERM/SIGINT the counts, then exits 0.
 */
import { parseArgs } from 'node:util';
import { startFakeShopify, type FakeShopifyOptions } from '../test/fixtures/fake-shopify.ts';

const USAGE =
  'usage: bun scripts/fake-shopify.ts --client-id ID --client-secret SECRET [--port N] [--token STATIC] [--bucket-max N --restore-rate N] [--token-ttl SECONDS] [--shop DOMAIN]';

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

const opts: FakeShopifyOptions = {
  app: { clientId, clientSecret, tokenTtlSeconds: integer('token-ttl', values['token-ttl'], 1) },
  port: integer('port', values.port, 0) ?? 0,
  token: values.token ?? process.env.FAKE_SHOPIFY_TOKEN,
  bucket: bucketMax !== undefined && restoreRate !== undefined ? { maximumAvailable: bucketMax, restoreRate } : undefined,
  shop: shop !== undefined ? { domain: shop, name: shop.replace(/\.myshopify\.com$/, '') } : undefined,
  onReply: ({ method, path, status }) => process.stderr.write(`${new Date().toISOString()} ${method} ${path} ${status}\n`),
};

const fake = startFakeShopify(opts);
process.stdout.write(`${JSON.stringify({ ready: true, url: fake.url, pid: process.pid })}\n`);
await new Promise<void>((r) => process.once('SIGTERM', () => r()).once('SIGINT', () => r()));
process.stdout.write(`${JSON.stringify({ requests: fake.requests.length, shopQueries: fake.shopQueries.length, tokenRequests: fake.tokenRequests.length })}\n`);
await fake.stop();
process.exit(0);
