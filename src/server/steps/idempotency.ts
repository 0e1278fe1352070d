/**
 * The idempotency step: an execute needs an Idempotency-Key; a call with a key runs once per store and key (24 h),
 * and a retry gets the stored answer (secrets redacted) instead of running again, on any instance.
 */
import { IDEMPOTENCY_KEY_MAX_LENGTH, IDEMPOTENCY_STALE_MS, IDEMPOTENCY_TTL_MS } from '../../contract/limits.ts';
import { AppError, inProgress } from '../../contract/errors.ts';
import type { Operation } from '../../contract/operations.ts';
import type { Core } from '../../core.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { crashPoint } from '../../lib/crash-points.ts';
import { redactDocument, redactSecretsIn } from '../../lib/redact.ts';
import type { Answer } from '../http.ts';

export interface IdempotencyDeps {
  core: Core;
  /** Executions in flight per store + Idempotency-Key, so concurrent retries run once. */
  inflight: Map<string, Promise<unknown>>;
}

/** 400 unless an execute step of an operation that requires one carries its Idempotency-Key. */
export function requireKey(op: Operation, executing: boolean, key: string | null): void {
  if (op.idempotency === 'execute' && executing && !key) {
    throw new AppError('invalid_input', 'Send an Idempotency-Key header with every execute step.', [
      { path: 'header.Idempotency-Key', code: 'required', message: 'Required on execute' },
    ]);
  }
}

/**
 * `run`'s answer, once per store and `key`: a retry with the same request gets the stored answer (`replayed`), one
 * with another request 422, one while the first is still running elsewhere 409. A claim whose holder is gone is taken
 * over. A run that throws stores nothing: a retry may run again.
 */
export async function idempotent(
  deps: IdempotencyDeps,
  op: Operation,
  storeId: string,
  key: string,
  request: { params: Record<string, string>; body: unknown },
  run: () => Promise<Answer>,
): Promise<Answer> {
  if (key.length > IDEMPOTENCY_KEY_MAX_LENGTH) {
    throw new AppError('invalid_input', `Idempotency-Key is at most ${IDEMPOTENCY_KEY_MAX_LENGTH} characters.`);
  }
  const requestHash = sha256Hex(JSON.stringify([op.operationId, request.params, request.body ?? null]));
  const slot = `${storeId}\u0000${key}`;
  // Requests with this key on this instance wait for the first; the storage claim decides across instances.
  while (deps.inflight.has(slot)) await deps.inflight.get(slot)!.catch(() => {});
  // Claim the slot before any await, so concurrent requests with this key wait for this one.
  let release!: () => void;
  deps.inflight.set(slot, new Promise<void>((r) => (release = r)));
  try {
    const { repo } = deps.core;
    const now = deps.core.clock.now();
    const me = await repo.instance.id();
    let held = await repo.claimIdempotency(
      { storeId, key, operationId: op.operationId, requestHash, createdAt: now, owner: me },
      now - IDEMPOTENCY_TTL_MS,
      now - IDEMPOTENCY_STALE_MS,
    );
    // A pending claim whose holder is gone (killed mid-request; or this instance's own, left by a request that
    // could not release it: this one holds the key's in-flight slot) is taken over now, not when it turns stale.
    if (held?.status === 0 && held.owner !== null && (held.owner === me || !(await repo.instance.alive(held.owner)))) {
      if (await repo.takeOverIdempotency(storeId, key, held.owner, me, now)) held = null;
    }
    if (held) {
      if (held.operationId !== op.operationId || held.requestHash !== requestHash) {
        throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request in the last 24 hours.');
      }
      if (held.status === 0) {
        throw inProgress(
          'request_in_progress',
          'A request with this Idempotency-Key is still in progress on another instance; retry with the same key once it has finished.',
        );
      }
      return { status: held.status, body: JSON.parse(held.response), replayed: true };
    }
    crashPoint('key-claimed');
    let answer: Answer;
    try {
      answer = await run();
    } catch (err) {
      // Nothing to replay: a retry with this key may run again.
      await repo.releaseIdempotency(storeId, key).catch(() => {});
      throw err;
    }
    await repo.putIdempotency({
      storeId,
      key,
      operationId: op.operationId,
      requestHash,
      status: answer.status,
      response: JSON.stringify(withoutSecrets(answer.body)),
      createdAt: deps.core.clock.now(),
      owner: null,
    });
    crashPoint('answer-stored');
    return answer;
  } finally {
    deps.inflight.delete(slot);
    release();
  }
}

/** A stored idempotent response never keeps a secret: it was shown once, in the original response. */
function withoutSecrets(value: unknown): unknown {
  return redactDocument(value, { text: redactSecretsIn, secretField: () => '(shown once in the original response)' });
}
