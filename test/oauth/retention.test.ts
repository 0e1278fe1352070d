/**
 * Retention of the authorization server's rows, through the worker's own sweep: requests, codes and access tokens go
 * a day after they expire, a revoked family's tokens a day after its revocation; a live grant's refresh tokens (the
 * current one and the used ones a thief could replay) stay until the grant expires, so a replay is still seen.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { startAuthorization } from '../../src/oauth/authorization.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { rows } from '../helpers.ts';
import { authorized, authorizeQuery, clientDocument, oauthWorld, pkce, postForm, REDIRECT, type OAuthWorld } from './_world.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

let w: OAuthWorld;
let clientId: string;
beforeAll(async () => {
  w = await oauthWorld();
  clientId = w.serve('/client.json', { body: clientDocument() });
});
afterAll(() => w.close());

const exchange = async (grantTtl: string) => {
  const a = await authorized(w, clientId, { ttl: grantTtl });
  const r = await postForm(w, '/oauth/token', {
    grant_type: 'authorization_code',
    code: a.code,
    code_verifier: a.verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
  });
  expect(r.status).toBe(200);
  return { grantId: a.grantId, ...(r.json as { access_token: string; refresh_token: string }) };
};
const refresh = (token: string) => postForm(w, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: clientId });
const pending = () => startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge));
const tokensOf = async (grantId: string) => (await rows(w, 'SELECT kind, used_at, revoked_at FROM oauth_tokens WHERE grant_id = ?', grantId)).length;
const count = async (table: string) => Number((await rows(w, `SELECT count(*) AS n FROM ${table}`))[0]!.n);

describe('retention of the OAuth rows', () => {
  it('drops what ended a day ago and keeps what may still be presented: a live grant’s refresh tokens until the grant expires', async () => {
    const worker = new HandoffWorker(w.core);
    // A live grant, rotated once: its first refresh token used, the second current.
    const live = await exchange('7d');
    const rotated = await refresh(live.refresh_token);
    expect(rotated.status).toBe(200);
    // A family revoked by its client (RFC 7009): the grant lives on, the family's four tokens are revoked.
    const revoked = await exchange('7d');
    const revokedNext = (await refresh(revoked.refresh_token)).json.refresh_token as string;
    expect((await postForm(w, '/oauth/revoke', { token: revokedNext })).status).toBe(200);
    // A grant of two days; a request nobody decided; a code nobody exchanged.
    const short = await exchange('2d');
    await pending();
    await authorized(w, clientId);
    expect([await count('oauth_requests'), await count('oauth_codes'), await count('oauth_tokens')]).toEqual([5, 4, 10]);

    w.clock.advance(2 * HOUR);
    expect(await worker.sweep()).toMatchObject({ oauthRequests: 0, oauthCodes: 0, oauthTokens: 0 });

    w.clock.advance(DAY);
    const fresh = await pending();
    const swept = await worker.sweep();
    // Every request and code; the access tokens (an hour's life) and the revoked family's four.
    expect(swept).toMatchObject({ oauthRequests: 5, oauthCodes: 4, oauthTokens: 3 + 4 });
    expect(w.log.lines.join('\n')).toContain('5 oauthRequests, 4 oauthCodes, 7 oauthTokens past their retention');
    expect(await rows(w, 'SELECT id FROM oauth_requests')).toEqual([{ id: fresh.id }]);
    expect(await tokensOf(revoked.grantId)).toBe(0);
    expect(await rows(w, 'SELECT kind FROM oauth_tokens WHERE grant_id = ? ORDER BY created_at', live.grantId)).toEqual([
      { kind: 'refresh' },
      { kind: 'refresh' },
    ]);
    expect(await tokensOf(short.grantId)).toBe(1);

    // The current refresh token still rotates; the used one, replayed, is still seen as a replay and ends the grant.
    const again = await refresh(rotated.json.refresh_token);
    expect(again.status).toBe(200);
    const replay = await refresh(live.refresh_token);
    expect(replay.json).toMatchObject({ error: 'invalid_grant', error_description: 'The refresh token was already used; its family and grant are revoked.' });
    expect((await rows(w, 'SELECT revoked_at FROM grants WHERE id = ?', live.grantId))[0]!.revoked_at).not.toBeNull();

    // A day after that revocation and after the two-day grant's expiry: their tokens go too, and the fresh request.
    w.clock.advance(2 * DAY);
    expect(await worker.sweep()).toMatchObject({ oauthRequests: 1, oauthCodes: 0, oauthTokens: 4 + 1 });
    expect(await count('oauth_tokens')).toBe(0);
    expect(await worker.sweep()).toMatchObject({ oauthRequests: 0, oauthCodes: 0, oauthTokens: 0 });
  });

  it('goes in bounded batches, oldest expiry first', async () => {
    for (let i = 0; i < 3; i++) {
      await pending();
      w.clock.advance(60_000);
    }
    const first = (await rows(w, 'SELECT id FROM oauth_requests ORDER BY expires_at'))[0]!.id;
    w.clock.advance(2 * DAY);
    const cut = {
      eventsBeforeId: 'evt_0',
      auditBeforeId: 'aud_0',
      intentsBeforeId: 'int_0',
      intentsEndedBefore: 0,
      requestsBefore: 0,
      authFailuresBefore: 0,
      now: w.clock.now(),
      limit: 2,
    };
    expect(await w.repo.sweepRetention(cut)).toMatchObject({ oauthRequests: 2 });
    expect((await rows(w, 'SELECT id FROM oauth_requests')).map((r) => r.id)).not.toContain(first);
    expect(await w.repo.sweepRetention(cut)).toMatchObject({ oauthRequests: 1 });
    expect(await count('oauth_requests')).toBe(0);
  });
});
