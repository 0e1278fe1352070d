/**
 * An agent connects by URL: the MCP SDK's own clients, given only `http://127.0.0.1:PORT/agent/v1/mcp` and a client
 * metadata document served on loopback, go through discovery (401 challenge → RFC 9728 → RFC 8414) → the
 * authorization URL (whose checks and consent are driven here as the consent page drives them: startAuthorization,
 * the merchant's approval, finishAuthorization) → the token endpoint → tools/list and a `search` → a replay preview
 * and its execute by code mode, audited under the OAuth grant after the human's issue of it.
 * - The 1.x client (its OAuth client provider, StreamableHTTPClientTransport): once with the approval in process and
 *   the document over https (the SDK's own Client ID Metadata Document path), with a refresh and the grant revoked
 *   ending both tokens; once with `hookrelay grant approve CODE` run as a real process and the document on http.
 * - The 2.x client (`@modelcontextprotocol/client`, pinned to 2026-07-28: no initialize, `server/discover`), its
 *   document over https taken as its client_id by the SDK itself, approved with `hookrelay grant approve` as a process.
 */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  auth as modernAuth,
  type OAuthClientProvider as ModernOAuthClientProvider,
  StreamableHTTPClientTransport as ModernTransport,
  UnauthorizedError as ModernUnauthorizedError,
} from '@modelcontextprotocol/client';
import { auth, type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Client as ModernClient } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { openCore } from '../../src/boot.ts';
import type { Core } from '../../src/core.ts';
import { approveAuthorization, finishAuthorization, startAuthorization } from '../../src/oauth/authorization.ts';
import { revokeGrant } from '../../src/ops/grants.ts';
import { initStore } from '../../src/ops/stores.ts';
import { startServer } from '../../src/server/serve.ts';
import { closedPort, ENTRY } from '../cli/harness.ts';
import { startMcpServer, tool, type McpServerUnderTest } from '../mcp/harness.ts';
import {
  clientDocument,
  eventToReplay,
  expectReplayUnderGrant,
  localhostCertificate,
  pinnedModernClient,
  REDIRECT,
  replayByCode,
  startDocumentServer,
  testOAuth,
  type DocumentServer,
} from './_world.ts';
import { KeptProvider } from './_client.ts';

setDefaultTimeout(120_000);

/**
 * The client's side as an MCP host keeps it (KeptProvider), naming itself by its metadata document's URL either as the
 * SDK does for an https document (`clientMetadataUrl`, SEP-991: the SDK makes it the client_id once the server says it
 * takes such documents), or, for a document on http (loopback), as a client already registered with that URL as its
 * id. One class serves both SDKs' clients.
 */
class MemoryProvider extends KeptProvider implements OAuthClientProvider, ModernOAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  clientMetadataUrl?: string;
  constructor(by: { metadataUrl: string } | { registered: string }) {
    super();
    if ('metadataUrl' in by) this.clientMetadataUrl = by.metadataUrl;
    else this.info = { client_id: by.registered };
  }
  get clientId() {
    return this.info?.client_id ?? this.clientMetadataUrl!;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return { client_name: 'Test Agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
}

/**
 * The person's part of the flow, after the client sent them to its authorization URL: that URL's checks, the request
 * started as the page starts it, decided by `approve` (by the user code), and finished: the callback's parameters
 * (code, state and iss checked) and the grant's id.
 */
async function consent(core: Core, base: string, provider: MemoryProvider, approve: (userCode: string) => Promise<string>) {
  const to = provider.sentTo!;
  expect(`${to.origin}${to.pathname}`).toBe(`${base}/oauth/authorize`);
  expect(Object.fromEntries(to.searchParams)).toMatchObject({
    response_type: 'code',
    client_id: provider.clientId,
    code_challenge_method: 'S256',
    redirect_uri: REDIRECT,
    resource: `${base}/agent/v1/mcp`,
    state: provider.sentState,
  });
  // The client asks for what the challenge names, replay:execute among it, so the merchant may give replay.
  expect(to.searchParams.get('scope')?.split(' ')).toContain('replay:execute');
  const req = await startAuthorization(core, to.searchParams);
  expect(req.client).toMatchObject({ name: 'Test Agent', verified: false });
  const grantId = await approve(req.userCode);
  const back = new URL((await finishAuthorization(core, req.id))!);
  expect(back.searchParams.get('state')).toBe(provider.sentState);
  expect(back.searchParams.get('iss')).toBe(base);
  return { grantId, back: back.searchParams };
}

/**
 * The whole flow from the URL alone with the 1.x client: refused (401), it discovers and sends the person to the
 * authorization URL; the person decides (`consent`); the SDK exchanges the code. A connected client and the grant.
 */
async function connectByUrl(core: Core, base: string, provider: MemoryProvider, approve: (userCode: string) => Promise<string>) {
  const mcpUrl = new URL('/agent/v1/mcp', base);
  const refused = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  await expect(new Client({ name: 'oauth-e2e', version: '1.0.0' }).connect(refused)).rejects.toBeInstanceOf(UnauthorizedError);
  const { grantId, back } = await consent(core, base, provider, approve);
  await refused.finishAuth(back.get('code')!);
  expect(provider.saved?.access_token).toStartWith('hra_');
  const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  return { client, grantId, mcpUrl };
}

/**
 * The same with the 2.x client pinned to 2026-07-28: its `server/discover` is refused (401), it discovers and sends
 * the person; after the decision it takes the callback's parameters (checking `iss` itself, RFC 9207) for its token.
 */
async function connectModernByUrl(core: Core, base: string, provider: MemoryProvider, approve: (userCode: string) => Promise<string>) {
  const mcpUrl = new URL('/agent/v1/mcp', base);
  const refused = new ModernTransport(mcpUrl, { authProvider: provider });
  await expect(pinnedModernClient('oauth-e2e-2026').connect(refused)).rejects.toBeInstanceOf(ModernUnauthorizedError);
  const { grantId, back } = await consent(core, base, provider, approve);
  await refused.finishAuth(back);
  expect(provider.saved?.access_token).toStartWith('hra_');
  const client = pinnedModernClient('oauth-e2e-2026');
  await client.connect(new ModernTransport(mcpUrl, { authProvider: provider }));
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  return { client, grantId, mcpUrl };
}

/** tools/list and a `search` through the connected client (either SDK's): what the token may call. */
async function useTools(client: Client | ModernClient) {
  const tools = await client.listTools();
  expect(tools.tools.map((t) => t.name).sort()).toEqual(['execute', 'search']);
  const found = await tool(client, 'search', { query: 'grant', schemas: false });
  expect(found.isError).toBe(false);
  return found.doc.operations as { operationId: string; callable: boolean }[];
}

/** What the bearer step and the token endpoint say of `tokens` now: the MCP endpoint's status and the refresh's error. */
async function tokenFates(base: string, mcpUrl: URL, tokens: OAuthTokens, clientId: string) {
  const mcp = await fetch(mcpUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  await mcp.body?.cancel();
  const refreshed = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId }),
  });
  return { mcp: mcp.status, refresh: ((await refreshed.json()) as { error?: string }).error ?? 'ok' };
}

describe('the MCP SDK client connects by URL, the merchant approving in process', () => {
  let s: McpServerUnderTest;
  let docs: DocumentServer;
  beforeAll(async () => {
    // The client's document over https on loopback, as a real client's is: the SDK takes only an https URL as one.
    const tls = localhostCertificate();
    docs = startDocumentServer(tls);
    s = await startMcpServer({ oauth: testOAuth({ clientCa: tls.cert }) });
  });
  afterAll(async () => {
    await s.stop();
    docs.close();
  });

  it('discovery → authorize (its client_id the https document’s URL) → token → tools → search; refresh rotates; revoking the grant ends both tokens', async () => {
    const provider = new MemoryProvider({ metadataUrl: docs.serve('/agent.json', { body: clientDocument() }) });
    const store = (await s.env.repo.getStoreByShop('demo.myshopify.com'))!;
    const merchant = { store, actor: 'merchant@test', face: 'console' as const };
    const { client, grantId, mcpUrl } = await connectByUrl(s.env.core, s.url, provider, async (code) => {
      const req = await approveAuthorization(s.env.core, merchant, code, { tier: 'observer', ttl: '1d', label: 'Test Agent' });
      return req.grantId!;
    });
    expect(provider.clientId).toBe(`${docs.docs}/agent.json`);
    expect(provider.clientId).toStartWith('https://localhost:');
    expect(docs.hits('/agent.json')).toBeGreaterThan(0);
    const ops = await useTools(client);
    expect(ops.find((o) => o.operationId === 'getCurrentAgentGrant')?.callable).toBe(true);
    // The SDK asked for every scope (the challenge's); the observer tier gives its own within them.
    expect(provider.saved?.scope).toBe('setup:read event:read');

    const before = provider.saved!;
    expect(await auth(provider, { serverUrl: mcpUrl })).toBe('AUTHORIZED');
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    const again = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await again.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    expect((await again.listTools()).tools).toHaveLength(2);

    const live = provider.saved!;
    await revokeGrant(s.env.core, grantId);
    expect(await tokenFates(s.url, mcpUrl, live, provider.clientId)).toEqual({ mcp: 401, refresh: 'invalid_grant' });
    await Promise.all([client.close(), again.close()]);
  });
});

describe('the MCP SDK client connects by URL, the merchant approving with `hookrelay grant approve`', () => {
  const root = mkdtempSync(join(tmpdir(), 'hookrelay-oauth-'));
  const data = join(root, 'data');
  let core: Core;
  let running: Awaited<ReturnType<typeof startServer>>;
  let base: string;
  let docs: DocumentServer;
  let tlsDocs: DocumentServer;
  beforeAll(async () => {
    // A document on http (the 1.x client, registered by it) and one over https (the 2.x client's own SEP-991 path).
    docs = startDocumentServer();
    const tls = localhostCertificate();
    tlsDocs = startDocumentServer(tls);
    const port = closedPort();
    base = `http://127.0.0.1:${port}`;
    core = await openCore({
      dataDir: data,
      create: true,
      config: { publicUrl: base, oauth: testOAuth({ clientCa: tls.cert }) },
      log: { info() {}, warn() {}, error: console.error },
    });
    await initStore(core, { shopDomain: 'demo.myshopify.com' });
    running = await startServer(core, { port, host: '127.0.0.1', worker: false });
  });
  afterAll(async () => {
    await running.stop();
    await core.repo.close();
    docs.close();
    tlsDocs.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** The admin CLI as a child process on the served box's data directory; its one JSON document. */
  async function cli(...args: string[]) {
    const proc = Bun.spawn(['bun', ENTRY, ...args, '--data-dir', data], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, NO_COLOR: '1' },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return { code, json: JSON.parse(stdout) };
  }

  /** The agent replays an event under its grant (a day's, approved with the CLI): the audit tells the human's issue, then the replay. */
  async function replayUnder(client: Client | ModernClient, grantId: string, clientId: string) {
    const eventId = await eventToReplay({ core, app: running.app }, `by-url-${grantId}`);
    const { intentId, states } = await replayByCode(client, eventId);
    expect(states).toEqual(['previewed', 'executed']);
    await expectReplayUnderGrant(core, grantId, { surface: 'cli', clientId, ttlS: 86_400, intentId });
  }

  it('approves by the code the page shows; the grant is the client’s, audited as the person; a replay previewed and executed under it; `grant revoke` ends its tokens', async () => {
    const provider = new MemoryProvider({ registered: docs.serve('/cli-agent.json', { body: clientDocument() }) });
    const { client, grantId, mcpUrl } = await connectByUrl(core, base, provider, async (code) => {
      const missing = await cli('grant', 'approve', code);
      expect(missing.code).toBe(2);
      expect(missing.json.error.message).toContain('--tier');
      // The SDK asked for the challenge's ten scopes: every tier is offered.
      const approved = await cli('grant', 'approve', code, '--tier', 'recovery_operator', '--ttl', '1d', '--actor', 'Jane Ops');
      expect(approved.code).toBe(0);
      expect(approved.json.authorization).toMatchObject({ status: 'approved', client: { name: 'Test Agent', verified: false } });
      return approved.json.authorization.grantId as string;
    });
    const ops = await useTools(client);
    expect(ops.find((o) => o.operationId === 'getCurrentAgentGrant')?.callable).toBe(true);
    const listed = await cli('grant', 'list');
    const grant = listed.json.grants.find((g: { grantId: string }) => g.grantId === grantId);
    expect(grant).toMatchObject({ tier: 'recovery_operator', state: 'active' });
    const audit = await cli('audit', '--since', '1h');
    const issued = audit.json.entries.find((e: { operationId: string; targetId: string }) => e.operationId === 'issueGrant' && e.targetId === grantId);
    expect(issued).toMatchObject({ actorKind: 'human', actorLabel: 'Jane Ops', outcome: 'ok' });
    await replayUnder(client, grantId, provider.clientId);

    const tokens = provider.saved!;
    expect((await cli('grant', 'revoke', grantId)).code).toBe(0);
    expect(await tokenFates(base, mcpUrl, tokens, provider.clientId)).toEqual({ mcp: 401, refresh: 'invalid_grant' });
    await client.close();
  });

  it('the 2.x client on 2026-07-28, its https document its client_id: discover → authorize → `grant approve --tier recovery_operator` → token → tools → a replay previewed and executed → a refresh', async () => {
    const provider = new MemoryProvider({ metadataUrl: tlsDocs.serve('/agent-2026.json', { body: clientDocument() }) });
    const { client, grantId, mcpUrl } = await connectModernByUrl(core, base, provider, async (code) => {
      const approved = await cli('grant', 'approve', code, '--tier', 'recovery_operator', '--ttl', '1d', '--actor', 'Jane Ops', '--label', 'night shift 2026');
      expect(approved.code).toBe(0);
      expect(approved.json.authorization).toMatchObject({ status: 'approved', client: { name: 'Test Agent', verified: false } });
      return approved.json.authorization.grantId as string;
    });
    // The SDK took the https document's URL as its client_id (the server said it takes such documents), and the
    // server fetched it.
    expect(provider.clientId).toBe(`${tlsDocs.docs}/agent-2026.json`);
    expect(tlsDocs.hits('/agent-2026.json')).toBeGreaterThan(0);
    expect(provider.discovered?.authorizationServerMetadata?.issuer).toBe(base);
    const ops = await useTools(client);
    expect(ops.find((o) => o.operationId === 'getCurrentAgentGrant')?.callable).toBe(true);
    const found = await tool(client, 'search', { query: 'replay', schemas: false });
    expect(found.doc.operations.find((o: { operationId: string }) => o.operationId === 'createReplayIntent')?.callable).toBe(true);
    const grant = (await core.repo.listGrants()).find((g) => g.id === grantId);
    expect(grant).toMatchObject({ tier: 'recovery_operator', clientId: provider.clientId, label: 'night shift 2026' });
    await replayUnder(client, grantId, provider.clientId);
    // Its refresh from the discovery it kept: the tokens rotate, and the same client goes on with the new one.
    const before = provider.saved!;
    expect(await modernAuth(provider, { serverUrl: mcpUrl })).toBe('AUTHORIZED');
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    expect((await tool(client, 'search', { query: 'replay', schemas: false })).isError).toBe(false);
    await client.close();
  });

  it('refuses a tier above what the client asked, and approves one within it; --deny sends the client back refused', async () => {
    const clientId = docs.serve('/narrow.json', { body: clientDocument() });
    const query = (scope: string) =>
      new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
        resource: `${base}/agent/v1/mcp`,
        scope,
      });
    const req = await startAuthorization(core, query('setup:read event:read'));
    const above = await cli('grant', 'approve', req.userCode.toLowerCase(), '--tier', 'operator', '--ttl', '1d');
    expect(above.code).toBe(2);
    expect(above.json.error).toMatchObject({ code: 'invalid_input' });
    expect(above.json.error.message).toContain('above what Test Agent asked for');
    const ok = await cli('grant', 'approve', req.userCode, '--tier', 'observer', '--ttl', '2h', '--label', 'narrow');
    expect(ok.json.authorization).toMatchObject({ status: 'approved', requestedScopes: ['setup:read', 'event:read'] });
    const unknown = await cli('grant', 'approve', 'BBBB-BBBB', '--tier', 'observer', '--ttl', '1h');
    expect(unknown.json.error.code).toBe('not_found');
    expect(unknown.code).not.toBe(0);
    const again = await cli('grant', 'approve', req.userCode, '--tier', 'observer', '--ttl', '2h');
    expect(again.json.error.code).toBe('conflict');
    const denied = await startAuthorization(core, query('setup:read'));
    expect((await cli('grant', 'approve', denied.userCode, '--deny')).json.authorization.status).toBe('denied');
    expect(new URL((await finishAuthorization(core, denied.id))!).searchParams.get('error')).toBe('access_denied');
  });
});
