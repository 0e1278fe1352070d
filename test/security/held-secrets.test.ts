/**
 * Every secret serve holds, typed bare (no label, no recognisable shape) into any free-text field of a support,
 * feature or expansion request or a diagnostics share, never reaches storage, `hookrelay requests list/show`, the
 * operator webhook or a log line: the Shopify app's client secret (32 hex digits, as Shopify issues it), the store's
 * client secret, the box key, the operator webhook secret, the database password. Both backends.
 */
import { afterAll, describe, expect, it } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { heldSecrets } from '../../src/held-secrets.ts';
import { useOperatorNotifier } from '../../src/ops/operator-notify.ts';
import { getRequest, listRequests } from '../../src/ops/operator-requests.ts';
import { defaultConfig } from '../../src/core.ts';
import { newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { HeldSecrets, redactText, urlPasswords } from '../../src/lib/redact.ts';
import { startServer } from '../../src/server/serve.ts';
import { addGrant, addStore, createTestEnv, rows, type TestEnv } from '../helpers.ts';

/** The app's client secret as Shopify shows it: 32 lowercase hex digits, which no secret shape knows. */
const APP_SECRET = randomBytes(16).toString('hex');
/** A store's own client secret, in the variable its store row names. */
const STORE_SECRET = `cs-${randomBytes(6).toString('hex')}-x`;
const DB_PASSWORD = `Tr0ub4dor-${randomBytes(3).toString('hex')}`;
/** The operator webhook secret's key, with `+` and `/` so no run of it looks like a random token. */
const OPERATOR_KEY = 'Kx9+Lm2/Pq7+Rs4/Tu1+Vw8/Xy3+Za6/Bc5+De0/';
const OPERATOR_SECRET = `whsec_${OPERATOR_KEY}`;

const got: string[] = [];
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(req) {
    got.push(await req.text());
    return new Response('ok');
  },
});
afterAll(() => server.stop(true));

const VARS: Record<string, string> = {
  HOOKRELAY_SHOPIFY_APP_SECRET: APP_SECRET,
  SHOP_CLIENT_SECRET: STORE_SECRET,
  HOOKRELAY_DATABASE_URL: `postgres://relay:${encodeURIComponent(DB_PASSWORD)}@db.internal:5432/relay`,
  HOOKRELAY_OPERATOR_WEBHOOK_URL: `http://127.0.0.1:${server.port}/notify`,
  HOOKRELAY_OPERATOR_WEBHOOK_SECRET: OPERATOR_SECRET,
};

/** Each canary, by what it is. */
function canaries(env: TestEnv): Record<string, string> {
  return {
    'app client secret': APP_SECRET,
    'app client secret, upper case': APP_SECRET.toUpperCase(),
    "store's client secret": STORE_SECRET,
    'database password': DB_PASSWORD,
    'operator webhook secret': OPERATOR_SECRET,
    'operator webhook secret without whsec_': OPERATOR_KEY,
    'box key, base64': Buffer.from(env.core.box.key()).toString('base64'),
  };
}

/** Text with every canary typed bare, as a person would paste it. */
const typed = (c: Record<string, string>) =>
  Object.entries(c)
    .map(([what, v]) => `the ${what} is ${v} if that helps`)
    .join('; ');

/** Every canary found in `text`, by name (none, when the redactor did its work). */
function leaks(c: Record<string, string>, text: string): string[] {
  const lower = text.toLowerCase();
  return Object.entries(c)
    .filter(([, v]) => lower.includes(v.toLowerCase()))
    .map(([what]) => what);
}

describe('secrets serve holds, typed bare into free text', () => {
  it('are redacted before storage, in requests list/show, in the operator notification and in every log line', async () => {
    got.length = 0;
    const env = await createTestEnv({ env: (n) => VARS[n] });
    const notifier = useOperatorNotifier(env.core, { delaysMs: [], timeoutMs: 2000 });
    await addStore(env, { clientId: 'client-1', clientSecretEnv: 'SHOP_CLIENT_SECRET' });
    const token = await addGrant(env, 'admin_assistant');
    const c = canaries(env);
    const text = typed(c);
    // Served over HTTP, one log line per request, as `hookrelay serve` runs.
    const running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false, logRequests: true });
    const call = async (method: string, path: string, opts: { body: unknown; headers?: Record<string, string> }) => {
      const res = await fetch(`${running.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...opts.headers },
        body: JSON.stringify(opts.body),
      });
      const body = await res.text();
      return { status: res.status, text: body, json: JSON.parse(body) };
    };
    try {
      const support = await call('POST', '/agent/v1/support-request-intents', {
        headers: { 'Idempotency-Key': 'sup-1' },
        body: { mode: 'submit', consent: true, input: { category: 'setup', urgency: 'high', summary: text } },
      });
      expect(support.status).toBe(200);
      const share = await call('POST', '/agent/v1/diagnostics-share-intents', { body: { mode: 'preview', input: { note: text } } });
      expect(share.status).toBe(201);
      expect(leaks(c, share.text)).toEqual([]);
      const { id: intentId, confirmation } = share.json.data.intent;
      const executed = await call('POST', '/agent/v1/diagnostics-share-intents', {
        headers: { 'Idempotency-Key': 'diag-1' },
        body: { mode: 'execute', intentId, confirmationToken: confirmation.token },
      });
      expect(executed.status).toBe(200);
      const feature = await call('POST', '/agent/v1/feature-requests', { body: { capability: text.slice(0, 200), problem: text, detail: text } });
      expect(feature.status).toBe(201);
      const expansion = await call('POST', '/agent/v1/expansion-requests', { body: { kind: 'platform', summary: text, detail: text } });
      expect(expansion.status).toBe(201);
      for (const r of [support, feature, expansion]) expect(leaks(c, r.text)).toEqual([]);

      // Storage: every row of every table that keeps what an agent wrote.
      for (const table of ['records', 'intents', 'idempotency_keys', 'audit_log']) {
        const dump = JSON.stringify(await rows(env, `SELECT * FROM ${table}`));
        expect({ table, leaks: leaks(c, dump) }).toEqual({ table, leaks: [] });
      }
      const stored = JSON.stringify(await rows(env, 'SELECT body FROM records'));
      expect(stored).toContain('[redacted secret]');

      // What the operator reads: with what the reading process holds, and with nothing held (the stored text alone).
      const stores = await env.core.repo.listStores();
      const listed = await listRequests(env.core, { limit: 100 }, heldSecrets(env.core, stores));
      expect(listed).toHaveLength(4);
      for (const held of [heldSecrets(env.core, stores), undefined]) {
        for (const r of listed) expect(leaks(c, JSON.stringify(await getRequest(env.core, r.id, held)))).toEqual([]);
        expect(leaks(c, JSON.stringify(await listRequests(env.core, { limit: 100 }, held)))).toEqual([]);
      }

      // The operator webhook: one notification per support, feature and expansion request.
      await notifier.idle();
      expect(got).toHaveLength(3);
      expect(leaks(c, got.join('\n'))).toEqual([]);
      expect(got.join('\n')).toContain('[redacted secret]');

      expect(env.log.lines.length).toBeGreaterThanOrEqual(5);
      expect(leaks(c, env.log.lines.join('\n'))).toEqual([]);
    } finally {
      await running.stop();
    }
  });

  it('a value too short to tell from a word is left alone; a held hex value goes in either case; a --database-url password goes', () => {
    const held = new HeldSecrets(['short', 'abcdef0123456789abcdef0123456789', 'Pa55-word-here']);
    expect(redactText('a short note', held)).toBe('a short note');
    expect(redactText('key ABCDEF0123456789ABCDEF0123456789 and Pa55-word-here.', held)).toBe('key [redacted secret] and [redacted secret].');
    // The password of a --database-url, which no variable shows: boot passes it in the config (src/boot.ts).
    const box = new SecretBox(newSecretKey());
    const config = defaultConfig({ env: () => undefined, heldSecrets: urlPasswords('postgres://relay:p%40ss-w0rd-42@db:5432/relay') });
    expect(redactText('it is p@ss-w0rd-42, or p%40ss-w0rd-42 in the URL', heldSecrets({ config, box }))).toBe(
      'it is [redacted secret], or [redacted secret] in the URL',
    );
    // Redacting twice changes nothing.
    const once = redactText('Pa55-word-here', held);
    expect(redactText(once, held)).toBe(once);
  });
});
