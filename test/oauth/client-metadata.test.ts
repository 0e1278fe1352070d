/**
 * Client ID Metadata Documents fetched safely (src/oauth/client-metadata.ts): the fences on a stranger's URL and
 * what its document must say, against a real document server on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { defaultConfig } from '../../src/core.ts';
import { startAuthorization } from '../../src/oauth/authorization.ts';
import { clientMetadata } from '../../src/oauth/client-metadata.ts';
import { OAuthError } from '../../src/oauth/errors.ts';
import { createTestEnv } from '../helpers.ts';
import { authorizeQuery, clientDocument, localhostCertificate, oauthWorld, pkce, startDocumentServer, testOAuth, type OAuthWorld } from './_world.ts';

let w: OAuthWorld;
beforeAll(async () => {
  w = await oauthWorld({ clientFetchTimeoutMs: 300, clientMaxBytes: 4096 });
});
afterAll(() => w.close());

/** The OAuthError `p` was refused with. */
async function refusal(p: Promise<unknown>): Promise<OAuthError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof OAuthError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('clientMetadata', () => {
  it('reads the client’s name, site and redirect URIs from its document', async () => {
    // Loopback http in each spelling, https, and a native app's own scheme (Cursor's).
    const redirectUris = [
      'http://127.0.0.1:9/a',
      'http://[::1]/a',
      'http://localhost/a',
      'https://agent.example/cb',
      'cursor://anysphere.cursor-mcp/oauth/callback',
    ];
    const url = w.serve('/ok.json', { body: clientDocument(redirectUris) });
    expect(await clientMetadata(w.core, url)).toEqual({ id: url, name: 'Test Agent', uri: 'https://agent.example', redirectUris });
  });

  it('fetches a document named by a host name (resolved, checked, then connected to), sending that name in Host', async () => {
    const url = w.serve('/named.json', { body: '' }).replace('127.0.0.1', 'localhost');
    w.serve('/named.json', { body: clientDocument()(url) });
    expect((await clientMetadata(w.core, url)).id).toBe(url);
    expect(w.hostOf('/named.json')).toBe(new URL(url).host);
  });

  it('refuses private, loopback and link-local addresses without the test setting, before any request', async () => {
    const env = await createTestEnv();
    for (const url of [
      'https://10.1.2.3/client.json',
      'https://192.168.0.10/client.json',
      'https://172.20.0.1/client.json',
      'https://169.254.169.254/latest/meta-data',
      'https://100.64.0.1/client.json',
      'https://[fd00::1]/client.json',
      'https://[fe80::1]/client.json',
      'https://[::ffff:a00:1]/client.json',
      'https://[::ffff:7f00:1]/client.json',
      'https://0.0.0.0/client.json',
      'https://[::]/client.json',
      'https://[::7f00:1]/client.json',
      'https://[2002:a00:1::]/client.json',
      'https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/client.json',
      'https://[fec0::1]/client.json',
      'https://[64:ff9b::a9fe:a9fe]/client.json',
      'https://127.0.0.1/client.json',
      'https://localhost/client.json',
      'https://[::1]/client.json',
    ]) {
      const err = await refusal(clientMetadata(env.core, url));
      expect({ url, error: err.error, redirectable: err.redirectable, private: err.description.includes('private') }).toEqual({
        url,
        error: 'invalid_client',
        redirectable: false,
        private: true,
      });
    }
    // Another spelling of an address (decimal, octal, hex, dotted IPv4 in IPv6) is not the URL's normal form: refused as such.
    for (const url of [
      'https://2130706433/client.json',
      'https://0177.0.0.1/client.json',
      'https://0x7f.1/client.json',
      'https://[::ffff:127.0.0.1]/client.json',
    ]) {
      const err = await refusal(clientMetadata(env.core, url));
      expect({ url, error: err.error, says: err.description.includes('normal form') }).toEqual({ url, error: 'invalid_client', says: true });
    }
    // A host name is resolved and each address checked (localhost above); the loopback server is never asked.
    const url = w.serve('/never.json', { body: clientDocument() });
    expect((await refusal(clientMetadata(env.core, url))).error).toBe('invalid_client');
    expect(w.hits('/never.json')).toBe(0);
  });

  it('refuses a client_id that is not an https URL with a path, or has credentials or a fragment', async () => {
    const env = await createTestEnv({ oauth: defaultConfig().oauth });
    for (const id of [
      'agent',
      'http://agent.example/c.json',
      'https://agent.example',
      'https://agent.example/',
      'https://u:p@agent.example/c',
      'https://agent.example/c#x',
    ]) {
      expect({ id, error: (await refusal(clientMetadata(env.core, id))).error }).toEqual({ id, error: 'invalid_client' });
    }
  });

  it('refuses a document too large, declared or not', async () => {
    const big = w.serve('/big.json', { body: (u) => clientDocument([`http://127.0.0.1:9/${'x'.repeat(5000)}`])(u) });
    expect((await refusal(clientMetadata(w.core, big))).description).toContain('larger than 4096 bytes');
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () =>
        new Response(
          new ReadableStream({
            pull(c) {
              c.enqueue(new TextEncoder().encode('x'.repeat(1024)));
            },
          }),
        ),
    });
    try {
      const url = `http://127.0.0.1:${server.port}/streamed.json`;
      expect((await refusal(clientMetadata(w.core, url))).description).toContain('larger than 4096 bytes');
    } finally {
      server.stop(true);
    }
  });

  it('refuses a document too slow to arrive', async () => {
    const slow = w.serve('/slow.json', { body: clientDocument(), delayMs: 1500 });
    const err = await refusal(clientMetadata(w.core, slow));
    expect(err.error).toBe('invalid_client');
    expect(err.description).toContain('did not arrive within 0.3 s');
  });

  it('refuses a document naming another client_id, or lacking a name or redirect URIs, or not JSON', async () => {
    const cases: [string, string | ((u: string) => string), string][] = [
      [
        '/wrong-id.json',
        JSON.stringify({ client_id: 'https://agent.example/client.json', client_name: 'X', redirect_uris: ['http://127.0.0.1:9/cb'] }),
        'another client_id',
      ],
      ['/no-name.json', (u) => JSON.stringify({ client_id: u, redirect_uris: ['http://127.0.0.1:9/cb'] }), 'client_name'],
      ['/bad-name.json', (u) => JSON.stringify({ client_id: u, client_name: 'Evil\u202eAgent', redirect_uris: ['http://127.0.0.1:9/cb'] }), 'client_name'],
      ['/no-uris.json', (u) => JSON.stringify({ client_id: u, client_name: 'X', redirect_uris: [] }), 'redirect_uris'],
      // A code must not cross a network in clear, nor land where the browser runs or reads it itself.
      ['/http-remote.json', clientDocument(['http://127.0.0.1:9/cb', 'http://agent.example/cb']), 'may not be sent to (http://agent.example/cb)'],
      ['/javascript.json', clientDocument(['javascript:alert(document.domain)//']), 'may not be sent to'],
      ['/data.json', clientDocument(['data:text/html,<script>alert(1)</script>']), 'may not be sent to'],
      ['/file.json', clientDocument(['file:///etc/passwd']), 'may not be sent to'],
      ['/secret.json', clientDocument(undefined, { token_endpoint_auth_method: 'client_secret_basic' }), 'public clients'],
      ['/not-json.json', 'hello', 'not JSON'],
      ['/array.json', '[]', 'not a JSON object'],
    ];
    for (const [path, body, says] of cases) {
      const err = await refusal(clientMetadata(w.core, w.serve(path, { body })));
      expect({ path, error: err.error, says: err.description.includes(says) }).toEqual({ path, error: 'invalid_client', says: true });
    }
  });

  it('reads a document over https from a certificate it trusts, and refuses one it does not', async () => {
    const tls = localhostCertificate();
    const secure = startDocumentServer(tls);
    try {
      const url = secure.serve('/tls.json', { body: clientDocument() });
      const trusting = await createTestEnv({ oauth: testOAuth({ clientCa: tls.cert }) });
      expect((await clientMetadata(trusting.core, url)).name).toBe('Test Agent');
      const err = await refusal(clientMetadata(w.core, url));
      expect(err).toMatchObject({ error: 'invalid_client', description: 'The client’s metadata document could not be fetched.' });
    } finally {
      secure.close();
    }
  });

  it('refuses a redirect and an error status, following neither', async () => {
    const target = w.serve('/target.json', { body: clientDocument() });
    const moved = w.serve('/moved.json', { status: 302, headers: { location: target } });
    expect((await refusal(clientMetadata(w.core, moved))).description).toContain('redirects');
    expect(w.hits('/target.json')).toBe(0);
    expect((await refusal(clientMetadata(w.core, w.serve('/gone.json', { status: 404 })))).description).toContain('HTTP 404');
  });

  it('caches a document for its max-age (bounded), and not when told no-store', async () => {
    const cached = w.serve('/cached.json', { body: clientDocument(), headers: { 'cache-control': 'public, max-age=60' } });
    await clientMetadata(w.core, cached);
    await clientMetadata(w.core, cached);
    expect(w.hits('/cached.json')).toBe(1);
    w.clock.advance(61_000);
    await clientMetadata(w.core, cached);
    expect(w.hits('/cached.json')).toBe(2);
    const fresh = w.serve('/fresh.json', { body: clientDocument(), headers: { 'cache-control': 'no-store, max-age=60' } });
    await clientMetadata(w.core, fresh);
    await clientMetadata(w.core, fresh);
    expect(w.hits('/fresh.json')).toBe(2);
    const year = w.serve('/year.json', { body: clientDocument(), headers: { 'cache-control': 'max-age=31536000' } });
    await clientMetadata(w.core, year);
    w.clock.advance(3600_000 + 1);
    await clientMetadata(w.core, year);
    expect(w.hits('/year.json')).toBe(2);
  });

  it('a refused document refuses the authorization as an error page, never a redirect', async () => {
    const err = await refusal(startAuthorization(w.core, authorizeQuery(w, 'https://10.0.0.1/client.json', pkce().challenge)));
    expect(err).toMatchObject({ error: 'invalid_client', redirectable: false, status: 400 });
  });
});
