import { describe, expect, it } from 'bun:test';
import type { CommittedReceipt } from '../../db/types.ts';
import { addGrant, addStore, createEndpoint, createTestEnv, holdCommits, orderEvent, sendHook } from '../helpers.ts';

describe('ReceiptWriter (group commit)', () => {
  it('commits the receipts of concurrent requests in one transaction', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const { endpoint, secret } = await createEndpoint(env, await addGrant(env));
    const calls: number[] = [];
    const original = env.repo.commitIngest.bind(env.repo);
    env.repo.commitIngest = async (receipts, failures) => {
      calls.push(receipts.length);
      return original(receipts, failures);
    };
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => sendHook(env, endpoint, secret, orderEvent(`gc-${i}`))));
    expect(replies.every((r) => r.status === 202)).toBe(true);
    expect(calls).toEqual([50]);
    expect(env.repo.sqlite.query('SELECT count(*) AS n FROM events').get()).toEqual({ n: 50 });
  });

  it('answers each request only after the commit that holds it', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const { endpoint, secret } = await createEndpoint(env, await addGrant(env));
    const release = holdCommits(env);
    let answered = false;
    const pending = sendHook(env, endpoint, secret, orderEvent('held-back')).then((r) => {
      answered = true;
      return r;
    });
    await Bun.sleep(20);
    expect(answered).toBe(false);
    release();
    expect((await pending).status).toBe(202);
  });

  it('never acknowledges when the commit fails: 503 with Retry-After, nothing recorded', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const { endpoint, secret } = await createEndpoint(env, await addGrant(env));
    env.repo.commitIngest = async (): Promise<CommittedReceipt[]> => {
      throw new Error('disk full');
    };
    const replies = await Promise.all([1, 2, 3].map((i) => sendHook(env, endpoint, secret, orderEvent(`fail-${i}`))));
    for (const r of replies) {
      expect(r.status).toBe(503);
      expect(r.json.code).toBe('temporarily_unavailable');
      expect(r.json.receiptId).toBeUndefined();
    }
    expect(env.log.lines.some((l) => l.includes('receipt commit failed'))).toBe(true);
    expect(env.log.lines.join('\n')).not.toContain('disk full');
  });

  it('commits what is pending on close and refuses new receipts after', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const { endpoint, secret } = await createEndpoint(env, await addGrant(env));
    const release = holdCommits(env);
    const inflight = [sendHook(env, endpoint, secret, orderEvent('a')), sendHook(env, endpoint, secret, orderEvent('b'))];
    await Bun.sleep(20);
    const closing = env.app.writer.close();
    release();
    await closing;
    expect((await Promise.all(inflight)).map((r) => r.status)).toEqual([202, 202]);
    expect((await sendHook(env, endpoint, secret, orderEvent('after'))).status).toBe(503);
    expect(env.repo.sqlite.query('SELECT count(*) AS n FROM events').get()).toEqual({ n: 2 });
  });
});
