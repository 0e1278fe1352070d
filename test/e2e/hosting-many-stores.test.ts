/**
 * README "Hosting for many stores", its loopback walk-through run as written (ports chosen free here): the fake
 * Shopify as `bun run fake-shopify` runs it, for many shops, delivering the app's webhooks to serve; `serve` from
 * source with the app's client id and secret and HOOKRELAY_SHOPIFY_ADMIN_URL=http://127.0.0.1:PORT/{shop}; two
 * merchants install through /auth/install as a browser (or `curl -L` with a cookie jar) does; events for each store
 * reach that store's shop; one merchant uninstalls (`POST /_fake/uninstall`): Shopify revokes the tokens and sends
 * app/uninstalled, hookrelay pauses that store with its events kept; shop/redact (`POST /_fake/webhook`) erases
 * its bodies; the other store runs on untouched.
 */
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sign } from '../../scripts/bench/_lib.ts';
import { closedPort } from '../cli/harness.ts';
import { browse } from '../fixtures/fake-shopify.ts';
import { until } from '../fixtures/handoff.ts';
import { runToExit, spawnServe, type ServeProcess } from '../fixtures/serve-process.ts';

setDefaultTimeout(120_000);

const ROOT = new URL('../../', import.meta.url).pathname;
const CLIENT_ID = 'demo-client';
const CLIENT_SECRET = 'demo-secret-many-stores-canary-41c9';
const A = 'alpine-outfitters.myshopify.com';
const B = 'birch-and-bloom.myshopify.com';

const dir = mkdtempSync(join(tmpdir(), 'hookrelay-hosting-'));
const dataDir = join(dir, 'many-stores');
let fake: ReturnType<typeof Bun.spawn> | null = null;
let serve: ServeProcess | null = null;
afterAll(async () => {
  serve?.proc.kill('SIGTERM');
  fake?.kill('SIGTERM');
  await Promise.all([serve?.proc.exited, fake?.exited]);
  rmSync(dir, { recursive: true, force: true });
});

describe('hosting for many stores, on the fake Shopify, as the README says', () => {
  it('install two stores, relay their events, uninstall one (app/uninstalled), then shop/redact erases only its bodies', async () => {
    const fakePort = closedPort();
    const servePort = closedPort();
    const fakeUrl = `http://127.0.0.1:${fakePort}`;

    // FAKE_SHOPIFY_CLIENT_SECRET=… bun run fake-shopify --client-id … --port … --webhook-url http://127.0.0.1:8787/shopify/webhooks
    fake = Bun.spawn(
      [
        'bun',
        join(ROOT, 'scripts/fake-shopify.ts'),
        '--client-id',
        CLIENT_ID,
        '--port',
        String(fakePort),
        '--webhook-url',
        `http://127.0.0.1:${servePort}/shopify/webhooks`,
      ],
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', FAKE_SHOPIFY_CLIENT_SECRET: CLIENT_SECRET }, stdout: 'pipe', stderr: 'pipe' },
    );
    const ready = JSON.parse(new TextDecoder().decode((await (fake.stdout as ReadableStream<Uint8Array>).getReader().read()).value).split('\n')[0]!);
    expect(ready).toMatchObject({ ready: true, url: fakeUrl });

    // HOOKRELAY_SHOPIFY_CLIENT_ID=… HOOKRELAY_SHOPIFY_APP_SECRET=… HOOKRELAY_SHOPIFY_ADMIN_URL='http://127.0.0.1:9797/{shop}' bun run serve --data-dir ./many-stores
    const env = { HOOKRELAY_SHOPIFY_CLIENT_ID: CLIENT_ID, HOOKRELAY_SHOPIFY_APP_SECRET: CLIENT_SECRET, HOOKRELAY_SHOPIFY_ADMIN_URL: `${fakeUrl}/{shop}` };
    serve = await spawnServe(dataDir, servePort, { env });
    const base = serve.url;
    const admin = (args: string[]) => runToExit([...args, '--data-dir', dataDir], dir, 30_000);

    // Two merchants install: curl -sL -c jar -b jar 'http://127.0.0.1:8787/auth/install?shop=…'
    for (const shop of [A, B]) {
      const landed = await browse(`${base}/auth/install?shop=${shop}`);
      expect(landed.status).toBe(200);
      expect(landed.page).toContain(`hookrelay is installed on ${shop}`);
    }
    const shown = (await admin(['store', 'show'])).json;
    const byShop = Object.fromEntries((shown.stores as any[]).map((s) => [s.shopDomain, s]));
    expect(byShop[A]).toMatchObject({ credentials: { mode: 'oauth' }, handoff: { state: 'active' } });
    expect(byShop[B]).toMatchObject({ credentials: { mode: 'oauth' }, handoff: { state: 'active' } });

    // Each store's agent (a grant the operator issues) creates an endpoint; a sender's events reach that store's shop.
    const tenant = async (shop: string) => {
      const grant = (await admin(['grant', 'issue', '--shop', shop, '--tier', 'operator', '--ttl', '8h', '--label', 'setup agent'])).json.token as string;
      const res = await fetch(`${base}/agent/v1/endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${grant}`, 'content-type': 'application/json' },
        body: JSON.stringify({ triggerVariant: 'generic', name: 'orders' }),
      });
      expect(res.status).toBe(201);
      const { data } = (await res.json()) as any;
      let n = 0;
      return {
        grant,
        async send(): Promise<string> {
          const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: `${shop}-${++n}`, order: { id: n }, note: `private-${shop}` });
          const r = await fetch(`${base}/hooks/${data.endpoint.id}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-hookrelay-signature': sign(data.secret, body) },
            body,
          });
          expect(r.status).toBe(202);
          return ((await r.json()) as any).eventId;
        },
        async event(id: string) {
          const r = await fetch(`${base}/agent/v1/events/${id}`, { headers: { authorization: `Bearer ${grant}` } });
          expect(r.status).toBe(200);
          return ((await r.json()) as any).data.event as { outcome: string; bodyRetention: string };
        },
      };
    };
    const a = await tenant(A);
    const b = await tenant(B);
    const shops = async () => Object.fromEntries(((await (await fetch(`${fakeUrl}/_fake/shops`)).json()) as any).shops.map((s: any) => [s.domain, s]));
    const a1 = await a.send();
    const b1 = await b.send();
    await until(async () => (await a.event(a1)).outcome === 'delivered' && (await b.event(b1)).outcome === 'delivered', 30_000);
    expect((await shops())[A]).toMatchObject({ installed: true, flowTriggers: 1 });
    expect((await shops())[B]).toMatchObject({ installed: true, flowTriggers: 1 });

    // The merchant of A uninstalls: curl -X POST 'http://127.0.0.1:9797/_fake/uninstall?shop=alpine-outfitters.myshopify.com'
    const uninstalled = await fetch(`${fakeUrl}/_fake/uninstall?shop=${A}`, { method: 'POST' });
    expect(uninstalled.status).toBe(200);
    const sent = (await uninstalled.json()) as any;
    expect(sent.appUninstalled).toMatchObject({ topic: 'app/uninstalled', state: 'delivered', attempts: [{ status: 200 }] });
    expect(sent.shopRedact).toMatchObject({ topic: 'shop/redact', state: 'scheduled' });
    // hookrelay confirmed it with Shopify (A's token is refused now) and paused A: events kept, none sent.
    await until(async () => (await admin(['store', 'show', '--shop', A])).json.stores[0].handoff.state === 'paused', 30_000);
    expect((await admin(['store', 'show', '--shop', A])).json.stores[0].handoff).toMatchObject({ state: 'paused', code: 'SVC_APP_UNINSTALLED' });
    const a2 = await a.send();
    const b2 = await b.send();
    await until(async () => (await b.event(b2)).outcome === 'delivered', 30_000);
    expect((await a.event(a2)).outcome).not.toBe('delivered');
    expect((await shops())[A]).toMatchObject({ installed: false, liveTokens: 0, flowTriggers: 1 });
    expect((await shops())[B]).toMatchObject({ installed: true, flowTriggers: 2 });

    // 48 hours later (or now): curl -X POST 'http://127.0.0.1:9797/_fake/webhook?shop=alpine-outfitters.myshopify.com&topic=shop/redact'
    const redact = await fetch(`${fakeUrl}/_fake/webhook?shop=${A}&topic=shop/redact`, { method: 'POST' });
    expect(((await redact.json()) as any).webhook).toMatchObject({ topic: 'shop/redact', state: 'delivered', attempts: [{ status: 200 }] });
    await until(async () => (await a.event(a1)).bodyRetention !== 'retained', 30_000);
    expect((await a.event(a2)).bodyRetention).not.toBe('retained');
    expect((await b.event(b1)).bodyRetention).toBe('retained');
    expect((await b.event(b2)).bodyRetention).toBe('retained');
    // Every delivery was answered 2xx at once, and the secret never reached either log.
    expect((await shops())[A].webhooks.map((w: any) => [w.topic, w.state])).toEqual([
      ['shop/redact', 'delivered'],
      ['app/uninstalled', 'delivered'],
    ]);
    expect(serve.stderr()).not.toContain(CLIENT_SECRET);
    serve.proc.kill('SIGTERM');
    fake.kill('SIGTERM');
    const fakeLog = await new Response(fake.stderr as ReadableStream<Uint8Array>).text();
    expect(fakeLog).toContain('webhook app/uninstalled for alpine-outfitters.myshopify.com');
    expect(fakeLog).not.toContain(CLIENT_SECRET);
  });
});
