/**
 * The OAuth tests' world: a deployment whose authorization server may fetch client metadata documents on loopback
 * (the test-only setting), its store, and a real HTTP server on loopback that serves client documents as each test
 * sets them (a document, a delay, a size, a redirect), plus PKCE helpers; and what the end-to-end journeys share: the
 * 2.x client pinned to 2026-07-28, a failed event to replay, the agent's replay preview and execute by code, and the
 * grant's story in the audit.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'bun:test';
import { Client as ModernClient } from '@modelcontextprotocol/client';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Server } from 'bun';
import { addStore, BASE, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';
import { execute } from '../mcp/harness.ts';
import { TIERS } from '../../src/contract/scopes.ts';
import { defaultConfig, type OAuthConfig } from '../../src/core.ts';
import { MODERN_PROTOCOL_VERSION } from '../../src/mcp/server.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { approveAuthorization, finishAuthorization, startAuthorization, type Approver } from '../../src/oauth/authorization.ts';

export const REDIRECT = 'http://127.0.0.1:9/callback';

/** How the document server answers one path. */
export interface Served {
  body?: string | ((url: string) => string);
  status?: number;
  delayMs?: number;
  headers?: Record<string, string>;
}

/** A real HTTP server on loopback serving client metadata documents as a test sets them. */
export interface DocumentServer {
  /** Its base URL, e.g. `http://127.0.0.1:40123`. */
  docs: string;
  /** Serves `path` as `answer` from now on; its URL. */
  serve(path: string, answer: Served): string;
  /** How many requests it has had for `path`. */
  hits(path: string): number;
  /** The Host header of its last request for `path`. */
  hostOf(path: string): string | null;
  close(): void;
}

/** A self-signed certificate for `localhost` (and 127.0.0.1), made by openssl for this run: the client document over https. */
export function localhostCertificate(): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-tls-'));
  try {
    const made = Bun.spawnSync({
      cmd: [
        'openssl',
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      stdout: 'pipe',
      stderr: 'pipe',
    });
    if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
    return { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The document server; over https with `tls` (its URLs then name `localhost`, the certificate's name). */
export function startDocumentServer(tls?: { cert: string; key: string }): DocumentServer {
  const routes = new Map<string, Served>();
  const counts = new Map<string, number>();
  const hosts = new Map<string, string | null>();
  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    ...(tls ? { tls } : {}),
    async fetch(req) {
      const url = new URL(req.url);
      counts.set(url.pathname, (counts.get(url.pathname) ?? 0) + 1);
      hosts.set(url.pathname, req.headers.get('host'));
      const answer = routes.get(url.pathname);
      if (!answer) return new Response('not found', { status: 404 });
      if (answer.delayMs) await Bun.sleep(answer.delayMs);
      const body = typeof answer.body === 'function' ? answer.body(`${docs}${url.pathname}`) : (answer.body ?? '');
      return new Response(body, { status: answer.status ?? 200, headers: { 'content-type': 'application/json', ...answer.headers } });
    },
  });
  const docs = tls ? `https://localhost:${server.port}` : `http://127.0.0.1:${server.port}`;
  return {
    docs,
    serve(path, answer) {
      routes.set(path, answer);
      return `${docs}${path}`;
    },
    hits: (path) => counts.get(path) ?? 0,
    hostOf: (path) => hosts.get(path) ?? null,
    close: () => server.stop(true),
  };
}

export interface OAuthWorld extends TestEnv, DocumentServer {
  /** The merchant deciding, as the CLI's operator would. */
  human: Approver;
}

/** A valid client document for the URL it is served at. */
export const clientDocument =
  (redirectUris = [REDIRECT], extra: Record<string, unknown> = {}) =>
  (url: string) =>
    JSON.stringify({ client_id: url, client_name: 'Test Agent', client_uri: 'https://agent.example', redirect_uris: redirectUris, ...extra });

/** The OAuth config of a test: client documents allowed on loopback, then `overrides`. */
export const testOAuth = (overrides: Partial<OAuthConfig> = {}): OAuthConfig => ({ ...defaultConfig().oauth, loopbackClients: true, ...overrides });

export async function oauthWorld(overrides: Partial<OAuthConfig> = {}): Promise<OAuthWorld> {
  const env = await createTestEnv({ oauth: testOAuth(overrides) });
  await addStore(env);
  const store = (await env.repo.getStoreByShop('demo.myshopify.com'))!;
  return { ...env, ...startDocumentServer(), human: { store, actor: 'merchant@test', face: 'console' } };
}

/** A PKCE pair: a verifier and its S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** An /oauth/authorize query for `clientId` (each field may be overridden or dropped with null). */
export function authorizeQuery(world: OAuthWorld, clientId: string, challenge: string, fields: Record<string, string | null> = {}): URLSearchParams {
  const all: Record<string, string | null> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: `${world.core.config.publicUrl}/agent/v1/mcp`,
    scope: 'setup:read event:read endpoint:write',
    state: 'st-123',
    ...fields,
  };
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(all)) if (v !== null) q.set(k, v);
  return q;
}

/** POSTs a form to the app in-process, as an OAuth client would; the JSON answer and status. */
export async function postForm(world: OAuthWorld, path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await world.app.fetch(
    new Request(`${BASE}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    }),
  );
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : null };
}

/**
 * One authorization as a client and a merchant go through it: started for `clientId`, approved by the world's
 * merchant at `tier`, and finished: the code, its verifier and the grant.
 */
export async function authorized(world: OAuthWorld, clientId: string, opts: { tier?: string; ttl?: string; fields?: Record<string, string | null> } = {}) {
  const { verifier, challenge } = pkce();
  const req = await startAuthorization(world.core, authorizeQuery(world, clientId, challenge, opts.fields));
  const approved = await approveAuthorization(world.core, world.human, req.userCode, { tier: opts.tier ?? 'operator', ttl: opts.ttl ?? '1d' });
  const location = new URL((await finishAuthorization(world.core, req.id))!);
  return { code: location.searchParams.get('code')!, verifier, grantId: approved.grantId!, resource: req.resource };
}

/** The 2.x client (`@modelcontextprotocol/client`) pinned to 2026-07-28: stateless, `server/discover` in place of initialize. */
export const pinnedModernClient = (name: string) =>
  new ModernClient({ name, version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN_PROTOCOL_VERSION } } });

/**
 * An event for the agent to replay: an endpoint made under a grant of the merchant's own (not the agent's), one order
 * event to it, and its handoff tried once (where the store has no Shopify link it fails). Its id.
 */
export async function eventToReplay(env: Pick<TestEnv, 'core' | 'app'>, tag: string, shopDomain = 'demo.myshopify.com'): Promise<string> {
  const own = await issueGrant(env.core, { shopDomain, tier: 'operator', ttlMs: 3600_000 });
  const created = await createEndpoint(env, own.token);
  const sent = await sendHook(env, created.endpoint, created.secret, orderEvent(tag));
  if (sent.status !== 202) throw new Error(`the event was not taken: ${sent.status} ${JSON.stringify(sent.json)}`);
  await new HandoffWorker(env.core).drain();
  return sent.json.eventId as string;
}

/**
 * The agent replays `eventId` as the spec has it, by code mode through either SDK's client: a preview in one `execute`,
 * then the execute with the preview's confirmation in another. The intent's id and the states each step answered.
 */
export async function replayByCode(client: Client | ModernClient, eventId: string) {
  const params = JSON.stringify({ eventId });
  const preview = await execute(
    client,
    `const r = await api.call('createReplayIntent', { params: ${params}, body: { mode: 'preview', input: { reason: 'connected by URL' } } });
     return { id: r.data.intent.id, token: r.data.intent.confirmation.token, state: r.data.intent.state };`,
  );
  if (preview.isError) throw new Error(`the preview failed: ${preview.text}`);
  const { id, token, state } = preview.doc.result as { id: string; token: string; state: string };
  const body = JSON.stringify({ mode: 'execute', intentId: id, confirmationToken: token });
  const executed = await execute(
    client,
    `const r = await api.call('createReplayIntent', { params: ${params}, body: ${body}, idempotencyKey: 'by-url-' + ${JSON.stringify(id)} }); return r.data.intent.state;`,
  );
  if (executed.isError) throw new Error(`the execute failed: ${executed.text}`);
  return { intentId: id, states: [state, executed.doc.result as string] };
}

/**
 * The grant's story as the audit must tell it, oldest first: the human's issue of it (on `surface`) at Recovery Operator
 * for `ttlS` seconds to the OAuth client `clientId`, then the agent's replay `intentId` previewed and executed under it
 * over MCP.
 */
export async function expectReplayUnderGrant(
  core: Pick<TestEnv['core'], 'repo'>,
  grantId: string,
  at: { surface: string; clientId: string; ttlS: number; intentId: string },
) {
  const rows = await core.repo.listAudit({ limit: 1000 });
  const story = rows
    .filter((a) => (a.operationId === 'issueGrant' && a.targetId === grantId) || (a.operationId === 'createReplayIntent' && a.grantId === grantId))
    .map((a) => ({ operationId: a.operationId, actorKind: a.actorKind, transition: a.transition, surface: a.surface, intentId: a.intentId }));
  const issued = `issued recovery_operator (${TIERS.recovery_operator.join(', ')}) for ${at.ttlS} s to OAuth client ${at.clientId}`;
  const replay = { operationId: 'createReplayIntent', actorKind: 'agent', surface: 'mcp', intentId: at.intentId };
  expect(story).toEqual([
    { operationId: 'issueGrant', actorKind: 'human', transition: issued, surface: at.surface, intentId: null },
    { ...replay, transition: 'previewed' },
    { ...replay, transition: 'executed' },
  ]);
}
