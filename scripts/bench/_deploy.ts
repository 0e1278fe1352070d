/**
 * A deployment for in-process handoff benches (bench:tokens, bench:budget): built as test/helpers.ts builds one,
 * but on the system clock and over any storage, with one Shopify store, a grant, one endpoint made through the
 * agent API, and signed events committed through the inbound path.
 */
import type { Repo } from '../../db/repo.ts';
import { createCore, defaultConfig, type Config, type Core } from '../../src/core.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { hmacHex, type SecretBox } from '../../src/lib/crypto.ts';
import type { Log } from '../../src/lib/log.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { initStore, type InitStoreInput } from '../../src/ops/stores.ts';
import { createApp, type App } from '../../src/server/app.ts';

export interface Deployment {
  core: Core;
  app: App;
  endpoint: { id: string; auth: { headerName: string; mode: string } };
  secret: string;
}

/** Events sent into the inbound path at once while a deployment is set up (not measured). */
const SETUP_CONCURRENCY = 64;

/** A core on `repo` pointed at the fake Shopify at `adminUrl`; `env` answers variable names (tokens, secrets). */
export function benchCore(repo: Repo, box: SecretBox, adminUrl: string, env: Record<string, string>, log: Log, config: Partial<Config> = {}): Core {
  return createCore({
    repo,
    box,
    clock: systemClock,
    log,
    config: defaultConfig({ publicUrl: 'http://local', shopifyAdminUrl: adminUrl, env: (name) => env[name], ...config }),
  });
}

/** Creates the store (unless it exists), a grant and one order endpoint through the app. */
export async function benchDeployment(core: Core, store: InitStoreInput): Promise<Deployment> {
  await initStore(core, store);
  const grant = await issueGrant(core, { shopDomain: store.shopDomain, tier: 'admin_assistant', ttlMs: 3600_000 });
  const app = createApp(core);
  const created = await app.fetch(
    new Request('http://local/agent/v1/endpoints', {
      method: 'POST',
      headers: { authorization: `Bearer ${grant.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id', name: 'bench' }),
    }),
  );
  const json = (await created.json()) as any;
  if (created.status !== 201) throw new Error(`creating the endpoint: HTTP ${created.status} ${JSON.stringify(json).slice(0, 300)}`);
  return { core, app, endpoint: json.data.endpoint, secret: json.data.secret };
}

/** `events` signed events through the inbound path (as test/helpers.ts sendHook sends them); each must be 202. */
export async function sendEvents(d: Deployment, events: number, prefix = 'bench'): Promise<void> {
  let next = 0;
  const sender = async () => {
    while (next < events) {
      const n = next++;
      const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: `${prefix}-${n}`, order: { id: 4501 + n } });
      const value = d.endpoint.auth.mode === 'hmac_sha256' ? hmacHex(d.secret, body) : d.secret;
      const res = await d.app.fetch(
        new Request(`http://local/hooks/${d.endpoint.id}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', [d.endpoint.auth.headerName]: value },
          body,
        }),
      );
      if (res.status !== 202) throw new Error(`inbound event ${n}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
      await res.arrayBuffer().catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: Math.min(SETUP_CONCURRENCY, events) }, sender));
}
