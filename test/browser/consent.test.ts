/**
 * An agent connects by URL, in Chromium (issue 38): the MCP SDK's own clients (1.x with its OAuth client provider, and
 * the 2.x `@modelcontextprotocol/client` pinned to 2026-07-28), given only `${url}/agent/v1/mcp` and a client metadata
 * document on loopback, discover hookrelay's authorization server and send the person to the consent page; the person
 * decides; the client receives its code at its loopback redirect_uri, takes its token, lists and calls the tools, and
 * (given the Recovery Operator tier) previews a replay by code mode and executes it. The client's pages are on `localhost`, hookrelay on
 * `127.0.0.1`: another site, so the navigation to /oauth/authorize carries no SameSite=Strict session cookie, as from
 * a real client, and the consent's hop to read it is exercised.
 *
 * - With a console session, each client: the consent form (client unverified), Recovery Operator chosen, approved →
 *   code, state, iss → token → tools → a replay previewed and executed, audited under the grant after its issue.
 * - Without one: the waiting page with the user code, approved on the embedded Agents page, and it goes on by itself.
 * - Refused: a decision without or with a wrong CSRF token (403), a tier above what was asked (400); nothing issued.
 * - Denied: the client hears access_denied.
 * - A client naming itself with the thirty XSS payloads: text on the consent and waiting pages, nothing ran.
 * Every consent page: no serious or critical axe violation, nothing ran that the page did not send, no request left
 * loopback; with HOOKRELAY_SCREENSHOTS=1 the consent and waiting pages go to docs/screenshots/.
 */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import {
  type Client as ModernClient,
  type OAuthClientProvider as ModernOAuthClientProvider,
  StreamableHTTPClientTransport as ModernTransport,
  UnauthorizedError as ModernUnauthorizedError,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Page } from 'puppeteer-core';
import { OAUTH_START_LIMITS } from '../../src/contract/limits.ts';
import { findAuthorization } from '../../src/oauth/authorization.ts';
import { issueSignInLink } from '../../src/seat/session.ts';
import { type BrowserFixture, launchBrowser, type Tab } from '../fixtures/browser.ts';
import { liveMarkup, XSS_PAYLOADS } from '../fixtures/xss-payloads.ts';
import { until } from '../fixtures/handoff.ts';
import { addStore, type TestEnv } from '../helpers.ts';
import { KeptProvider } from '../oauth/_client.ts';
import { eventToReplay, expectReplayUnderGrant, pinnedModernClient, replayByCode } from '../oauth/_world.ts';
import { authorizeQuery, loopbackOAuth } from '../seat/_consent.ts';
import { fill, follow, mainText, press } from './_moves.ts';
import { checkPage, embeddedWorld } from './_seat.ts';

setDefaultTimeout(120_000);

const CLIENT = { clientId: 'consent-app-client-0001', clientSecret: 'consent-app-secret-canary-9d2f' };
const SHOP = 'consent-store.myshopify.com';
const { fake, server, start } = embeddedWorld(CLIENT, SHOP, loopbackOAuth());

/** Serious and critical axe violations per page visited. */
const axeReport = new Map<string, number>();

/**
 * The agent's side on loopback: its metadata document (on 127.0.0.1, where hookrelay fetches it), and on
 * `localhost` (another site for the browser) the page the person starts from and the redirect_uri that receives
 * the authorization response.
 */
function agentSide() {
  let authorizationUrl = '';
  let clientId = '';
  let redirectUri = '';
  const callbacks: URLSearchParams[] = [];
  const srv = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(req): Response {
      const url = new URL(req.url);
      if (url.pathname === '/client.json')
        return Response.json({
          client_id: clientId,
          client_name: 'Night Shift Agent',
          client_uri: 'https://agents.example.test',
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: 'none',
        });
      const hostile = /^\/hostile\/(\d+)\.json$/.exec(url.pathname);
      if (hostile) {
        const p = XSS_PAYLOADS[Number(hostile[1]) - 1]!;
        return Response.json({
          client_id: `${url.origin}${url.pathname}`,
          client_name: `Agent ${p.text}`,
          client_uri: `https://agents.example.test/${p.text}`,
          redirect_uris: [redirectUri],
        });
      }
      if (url.pathname === '/start')
        return new Response(
          `<!doctype html><html lang="en"><title>Agent</title><main><a id="go" href="${authorizationUrl.replace(/"/g, '&quot;')}">Connect to hookrelay</a></main></html>`,
          {
            headers: { 'content-type': 'text/html' },
          },
        );
      if (url.pathname === '/callback') {
        callbacks.push(url.searchParams);
        return new Response('<!doctype html><html lang="en"><title>Done</title><main><p>You can close this tab.</p></main></html>', {
          headers: { 'content-type': 'text/html' },
        });
      }
      return new Response('not found', { status: 404 });
    },
  });
  clientId = `http://127.0.0.1:${srv.port}/client.json`;
  redirectUri = `http://localhost:${srv.port}/callback`;
  return {
    clientId,
    redirectUri,
    startUrl: `http://localhost:${srv.port}/start`,
    callbacks,
    setAuthorizationUrl: (u: string) => (authorizationUrl = u),
    stop: () => srv.stop(true),
  };
}

const agent = agentSide();

/**
 * The MCP SDK's OAuth client provider (either SDK's) for a client that names itself by its metadata document's URL;
 * what it keeps is KeptProvider's, and where it sends the person is the agent's start page's link.
 */
class AgentProvider extends KeptProvider implements OAuthClientProvider, ModernOAuthClientProvider {
  get redirectUrl() {
    return agent.redirectUri;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Night Shift Agent', redirect_uris: [agent.redirectUri], token_endpoint_auth_method: 'none' };
  }
  // A URL client_id over http on loopback: both SDKs check https only on `clientMetadataUrl`, so it is given here.
  clientInformation(): OAuthClientInformationMixed {
    return { client_id: agent.clientId };
  }
  override redirectToAuthorization(url: URL) {
    super.redirectToAuthorization(url);
    agent.setAuthorizationUrl(url.toString());
  }
}

/** Which SDK's client the agent runs: the 1.x one, or the 2.x one pinned to 2026-07-28. */
type Sdk = '1.x' | '2.x';

let browser: BrowserFixture;
beforeAll(async () => {
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server.stop();
  agent.stop();
  console.log(`axe serious+critical per page (consent): ${JSON.stringify(Object.fromEntries(axeReport))}`);
});

const mcpUrl = () => new URL(`${server.url}/agent/v1/mcp`);

/**
 * The SDK client's first connect: refused for want of a token, it discovers and asks for the authorization URL.
 * Returns how that client takes the callback's parameters for its token (the 2.x one checks `iss` itself).
 */
async function connectUnauthorized(provider: AgentProvider, sdk: Sdk = '1.x'): Promise<(callback: URLSearchParams) => Promise<void>> {
  let finish: (callback: URLSearchParams) => Promise<void>;
  if (sdk === '1.x') {
    const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
    await expect(new Client({ name: 'night-shift', version: '1.0.0' }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    finish = (cb) => transport.finishAuth(cb.get('code')!);
  } else {
    const transport = new ModernTransport(mcpUrl(), { authProvider: provider });
    await expect(pinnedModernClient('night-shift-2026').connect(transport)).rejects.toBeInstanceOf(ModernUnauthorizedError);
    finish = (cb) => transport.finishAuth(cb);
  }
  const u = provider.sentTo!;
  expect(`${u.origin}${u.pathname}`).toBe(`${server.url}/oauth/authorize`);
  expect(u.searchParams.get('client_id')).toBe(agent.clientId);
  expect(u.searchParams.get('code_challenge_method')).toBe('S256');
  expect(u.searchParams.get('resource')).toBe(mcpUrl().toString());
  return finish;
}

/**
 * After the callback: the token, then a fresh connect with it (the same SDK's client), tools/list and a `search`
 * call, then `andThen` with the connected client.
 */
async function finishAndUse(
  provider: AgentProvider,
  sdk: Sdk,
  finish: (callback: URLSearchParams) => Promise<void>,
  callback: URLSearchParams,
  andThen?: (client: Client | ModernClient) => Promise<void>,
) {
  await finish(callback);
  expect(provider.tokens()?.access_token).toBeTruthy();
  const client = sdk === '1.x' ? new Client({ name: 'night-shift', version: '1.0.0' }) : pinnedModernClient('night-shift-2026');
  await client.connect(
    sdk === '1.x' ? new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }) : new ModernTransport(mcpUrl(), { authProvider: provider }),
  );
  try {
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['execute', 'search']);
    const found = await client.callTool({ name: 'search', arguments: { query: 'setup state' } });
    expect(found.isError).toBeFalsy();
    const ops = (found.structuredContent as { operations: { operationId: string; callable: boolean }[] }).operations;
    expect(ops.map((o) => [o.operationId, o.callable])).toContainEqual(['getSetupState', true]);
    await andThen?.(client);
  } finally {
    await client.close();
  }
}

/**
 * Opens the agent's start page and follows its link to hookrelay (another site): the first answer is the hop (the
 * session cookie, SameSite=Strict, did not come along), the second the request's page, where it is read.
 */
async function goConnect(page: Page): Promise<void> {
  const answered: { url: string; status: number }[] = [];
  const seen = (r: import('puppeteer-core').HTTPResponse) => {
    if (r.request().resourceType() === 'document' && r.url().startsWith(server.url)) answered.push({ url: r.url(), status: r.status() });
  };
  page.on('response', seen);
  // A click goes to the tab in front (a background tab's is lost).
  await page.bringToFront();
  await page.goto(agent.startUrl, { waitUntil: 'load' });
  await Promise.all([page.waitForFunction(() => (globalThis as any).location.search.startsWith('?request='), { timeout: 15_000 }), page.click('#go')]);
  await page.waitForSelector('main h1');
  page.off('response', seen);
  expect(answered.map((a) => [new URL(a.url).searchParams.has('client_id'), new URL(a.url).searchParams.has('request'), a.status])).toEqual([
    [true, false, 200],
    [false, true, 200],
  ]);
}

/** The request the page is about (the id in its URL). */
const requestOf = async (e: TestEnv, page: Page) => (await findAuthorization(e.core, new URL(page.url()).searchParams.get('request')!))!;

const check = (tab: Tab, name: string, screenshot?: string) =>
  checkPage(tab, name, { ...(screenshot ? { screenshot, fullPage: true } : {}), onAxe: (n) => axeReport.set(name, n) });

/** A console session in the tab (its sign-in link opened). */
async function signIn(e: TestEnv, page: Page) {
  await page.goto((await issueSignInLink(e.core, SHOP, 'Jane Ops')).url, { waitUntil: 'load' });
  await page.waitForSelector('nav a[href="/console/agents"]');
}

describe('an agent connects by URL', () => {
  it('with a console session, the 1.x client: consent (client unverified) → Recovery Operator chosen → approved → code, state, iss → token → tools → a replay previewed and executed', async () => {
    await consoleJourney('1.x');
  });

  it('with a console session, the 2.x client on 2026-07-28: the same journey, to a replay previewed and executed', async () => {
    await consoleJourney('2.x');
  });

  it('without a session: the code on a waiting page, approved on the embedded Agents page, and the page goes on by itself', async () => {
    await codePath(true);
  });

  it('the same without JavaScript in the agent’s tab: Continue once approved', async () => {
    await codePath(false);
  });

  it('refuses a decision without or with a wrong CSRF token and a tier above what was asked; nothing is issued; deny tells the client access_denied', async () => {
    const e = await start();
    await addStore(e, { shopDomain: SHOP });
    const tab = await browser.tab({ cdn: 'blocked' });
    const { page } = tab;
    try {
      await signIn(e, page);
      // The client asks for reading only: the observer tier is all the form offers.
      const q = authorizeQuery({ id: agent.clientId, redirectUri: agent.redirectUri }, server.url, { scope: 'setup:read event:read' });
      agent.setAuthorizationUrl(`${server.url}/oauth/authorize?${q.query}`);
      await goConnect(page);
      const consentUrl = page.url();
      const ar = await requestOf(e, page);
      // A wrong CSRF token, then none: 403.
      await page.$eval('input[name=csrf]', (i) => ((i as any).value = 'x'.repeat(43)));
      await press(page, 'Approve', 'main', 403);
      await page.goto(consentUrl, { waitUntil: 'load' });
      await page.$eval('input[name=csrf]', (i) => i.remove());
      await press(page, 'Approve', 'main', 403);
      // A tier the form does not offer (above what was asked): refused, the form again.
      await page.goto(consentUrl, { waitUntil: 'load' });
      expect(ar.offeredTiers).toEqual(['observer']);
      await page.$eval('input[name=tier]', (i) => ((i as any).value = 'operator'));
      await press(page, 'Approve', 'main', 400);
      expect(await mainText(page)).toContain('Not done');
      expect(await e.core.repo.listGrants()).toEqual([]);
      expect((await findAuthorization(e.core, ar.id))?.status).toBe('pending');
      // Deny: back at the client with access_denied and its state.
      await Promise.all([
        page.waitForFunction((u) => (globalThis as any).location.href.startsWith(u), {}, agent.redirectUri),
        page.click('button[value=deny]'),
      ]);
      const cb = agent.callbacks.at(-1)!;
      expect(cb.get('error')).toBe('access_denied');
      expect(cb.get('state')).toBe(q.state);
      expect(cb.get('code')).toBeNull();
      expect(await e.core.repo.listGrants()).toEqual([]);
      // The browser's binding was spent with the answer: the request is not open here any more.
      expect(await navigatingStatus(page, `${server.url}/oauth/authorize?request=${ar.id}`)).toBe(403);
    } finally {
      await page.close();
    }
  });
});

describe('a client that names itself with markup', () => {
  it('reads as text on the consent page and the waiting page: nothing runs, nothing is stopped, no live markup', async () => {
    const e = await start();
    await addStore(e, { shopDomain: SHOP });
    const signedIn = await browser.tab({ cdn: 'blocked' });
    const anonymous = await browser.tab({ cdn: 'blocked' });
    try {
      // The tabs share one cookie jar: the waiting page's pass runs before the sign-in, or it would be the consent form.
      for (const tab of [anonymous, signedIn]) {
        if (tab === signedIn) await signIn(e, signedIn.page);
        for (const p of XSS_PAYLOADS) {
          // Many starts from one address: a new minute for each payload keeps them under OAUTH_START_LIMITS.
          e.clock.advance(OAUTH_START_LIMITS.windowMs);
          const client = { id: agent.clientId.replace('/client.json', `/hostile/${p.n}.json`), redirectUri: agent.redirectUri };
          agent.setAuthorizationUrl(`${server.url}/oauth/authorize?${authorizeQuery(client, server.url).query}`);
          tab.clear();
          await goConnect(tab.page);
          // The page meant: the consent form signed in, the waiting page with the user code not.
          expect({ n: p.n, form: (await tab.page.$('form[action="/oauth/authorize"]')) !== null, code: (await tab.page.$('#user-code')) !== null }).toEqual({
            n: p.n,
            form: tab === signedIn,
            code: tab === anonymous,
          });
          const text = await mainText(tab.page);
          expect(text).toContain(`Agent ${p.text}`.replace(/\s+/g, ' ').trim());
          expect({ n: p.n, spy: tab.spy, live: await tab.page.evaluate(liveMarkup) }).toEqual({
            n: p.n,
            spy: { xss: [], dialogs: [], errors: [], csp: [] },
            live: [],
          });
        }
        // Checked now: the signed-in pass moves the clock on, and this waiting page would go on to "expired".
        await check(tab, tab === signedIn ? 'Consent (hostile client)' : 'Waiting (hostile client)');
      }
    } finally {
      await signedIn.page.close();
      await anonymous.page.close();
    }
  });
});

/**
 * The console journey with `sdk`'s client: signed in, the agent's link to the consent page, Recovery Operator chosen
 * (the client asked for every scope), approved; the client's token, tools, and a replay previewed and executed by code
 * mode, audited under the grant after the human's issue of it; the Agents page lists the grant with its client.
 */
async function consoleJourney(sdk: Sdk): Promise<void> {
  const e = await start();
  await addStore(e, { shopDomain: SHOP });
  const tab = await browser.tab({ cdn: 'blocked' });
  const { page } = tab;
  try {
    await signIn(e, page);
    const provider = new AgentProvider();
    const finish = await connectUnauthorized(provider, sdk);
    await goConnect(page);
    const text = await mainText(page);
    expect(text).toContain('Night Shift Agent');
    expect(text).toContain('unverified');
    expect(text).toContain('You decide as Jane Ops');
    const ar = await requestOf(e, page);
    const radios = await page.$$eval('input[name=tier]', (is) => is.map((i) => [(i as any).value, (i as any).checked]));
    expect(radios).toEqual(ar.offeredTiers.map((t, i) => [t, i === 0]));
    tab.clear();
    await check(tab, `Consent (${sdk} client)`, sdk === '1.x' ? 'consent' : undefined);
    // The person chooses Recovery Operator (offered: the client asked for every scope), and approves.
    expect(ar.offeredTiers).toContain('recovery_operator');
    await page.click('input[name=tier][value=recovery_operator]');
    await fill(page, 'Label: how this grant is listed on the Agents page', 'night shift (browser)');
    await Promise.all([
      page.waitForFunction((u) => (globalThis as any).location.href.startsWith(u), {}, agent.redirectUri),
      page.click('button[value=approve]'),
    ]);
    const cb = agent.callbacks.at(-1)!;
    expect(cb.get('state')).toBe(provider.sentState);
    expect(cb.get('iss')).toBe(server.url);
    expect(cb.get('error')).toBeNull();
    const eventId = await eventToReplay(e, `browser-${sdk}`, SHOP);
    const [grant] = (await e.core.repo.listGrants()).filter((g) => g.clientId === agent.clientId);
    expect({ tier: grant?.tier, label: grant?.label }).toEqual({ tier: 'recovery_operator', label: 'night shift (browser)' });
    await finishAndUse(provider, sdk, finish, cb, async (client) => {
      const { intentId, states } = await replayByCode(client, eventId);
      expect(states).toEqual(['previewed', 'executed']);
      // The TTL the form offers, left as it is: 30 days.
      await expectReplayUnderGrant(e.core, grant!.id, { surface: 'console', clientId: agent.clientId, ttlS: 30 * 86_400, intentId });
    });
    // The Agents page lists it with its client, unverified.
    await page.goto(`${server.url}/console/agents`, { waitUntil: 'load' });
    const agents = await mainText(page);
    expect(agents).toContain('night shift (browser)');
    expect(agents).toContain('Night Shift Agent');
    expect(agents).toContain('unverified');
  } finally {
    await page.close();
  }
}

/**
 * The code path: nobody signed in where the agent sent the person; the waiting page shows the code; the merchant
 * approves it in the Shopify admin (embedded Agents page, the ID-token human); the waiting page goes on by its
 * script, or (`js` false: scripts off in that tab) by its Continue link.
 */
async function codePath(js: boolean): Promise<void> {
  const e = await start();
  const admin = await browser.tab({ cdn: 'stand-in', idToken: () => fake.idToken({ sub: '77' }) });
  const tab = await browser.tab({ cdn: 'blocked' });
  try {
    // The merchant's admin: the app installs on its first load.
    await admin.page.goto(fake.embeddedAppUrl(`${server.url}/app`, { sub: '77' }), { waitUntil: 'load' });
    expect(await e.core.repo.getStoreByShop(SHOP)).toBeTruthy();
    const provider = new AgentProvider();
    const finish = await connectUnauthorized(provider);
    if (!js) await tab.page.setJavaScriptEnabled(false);
    await goConnect(tab.page);
    const code = await tab.page.$eval('#user-code', (el) => el.textContent ?? '');
    expect(code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    expect(await mainText(tab.page)).toContain(`hookrelay grant approve ${code}`);
    if (js) {
      tab.clear();
      await check(tab, 'Waiting for approval', 'consent-waiting');
    }
    // In the admin: Agents → Approve a connection, with the code.
    await admin.page.bringToFront();
    await follow(admin.page, 'Agents', 'nav');
    await fill(admin.page, "Code shown on the agent's page (e.g. WDJB-MJHT)", code);
    await press(admin.page, 'Look up the request');
    const choices = await mainText(admin.page);
    expect(choices).toContain('Night Shift Agent');
    expect(choices).toContain('unverified');
    if (js) {
      admin.clear();
      await check(admin, 'Approve a connection', 'embedded-approve-connection');
    }
    await press(admin.page, 'Approve');
    expect(await mainText(admin.page)).toContain('The connection was approved');
    // The waiting page goes on by itself (its script asks the status), or by Continue without scripts.
    await tab.page.bringToFront();
    if (!js) {
      // Nothing moves by itself without scripts (past the script's poll interval); Continue does.
      await Bun.sleep(4_000);
      expect(new URL(tab.page.url()).searchParams.has('request')).toBe(true);
      await tab.page.click('a[href^="/oauth/authorize/continue"]');
    }
    await until(() => agent.callbacks.length > 0 && tab.page.url().startsWith(agent.redirectUri), 20_000);
    const cb = agent.callbacks.at(-1)!;
    expect(cb.get('state')).toBe(provider.sentState);
    expect(cb.get('iss')).toBe(server.url);
    await finishAndUse(provider, '1.x', finish, cb);
    const grants = await e.core.repo.listGrants();
    expect(grants.map((g) => [g.tier, g.clientId])).toEqual([['observer', agent.clientId]]);
  } finally {
    await tab.page.close();
    await admin.page.close();
  }
}

/** The status a GET of `url` answers in the tab. */
async function navigatingStatus(page: Page, url: string): Promise<number> {
  return (await page.goto(url, { waitUntil: 'load' }))?.status() ?? 0;
}
