/**
 * The intent journal's storage, written once for both dialects over the thin runner: an execute's change and the
 * intent's completion as one batch (one transaction), so an intent still `executing` has changed nothing; a dead
 * executor's intents reopened; a dead holder's Idempotency-Key claim taken over. Which change an intent makes and
 * when it is stale is decided above (src/ops/intents.ts and each kind); this only writes, by compare-and-set.
 */
import type { EndpointRow, RecordRow } from './types.ts';
import type { Instance } from './repo.ts';
import type { SqlRunner, Write } from './runner.ts';

/**
 * Completes an intent with its result, put last in the batch so the result can count the rows the change wrote (a
 * bulk replay's queued events). It is the batch's fence: only the executor holding the claim changes the row, so an
 * executor whose claim was taken over (it was thought dead) rolls its change back with it.
 */
export function finishIntent(id: string, executor: string, result: (changes: number[]) => string, at: number): Write {
  return {
    sql: "UPDATE intents SET state = 'executed', result = ?, updated_at = ?, confirmation_hash = NULL WHERE id = ? AND state = 'executing' AND executor = ?",
    params: (changes) => [result(changes), at, id, executor],
    mustChange: true,
  };
}

/** A new config version of an endpoint (an edit): only the fields an edit may change, from the version it showed. */
export function editEndpoint(row: EndpointRow, fromVersion: number, snapshot: unknown): Write[] {
  return [
    {
      sql: `UPDATE endpoints SET name = ?, trigger_variant = ?, resource_id_path = ?, related_resource_id_path = ?, required_paths = ?,
              source_label = ?, event_type = ?, header_name = ?, expected_every_ms = ?, config_version = ?, updated_at = ?
            WHERE id = ? AND store_id = ? AND config_version = ? AND status = 'active'`,
      params: [
        row.name,
        row.triggerVariant,
        row.resourceIdPath,
        row.relatedResourceIdPath,
        row.requiredPaths,
        row.sourceLabel,
        row.eventType,
        row.headerName,
        row.expectedEveryMs,
        row.configVersion,
        row.updatedAt,
        row.id,
        row.storeId,
        fromVersion,
      ],
      mustChange: true,
    },
    {
      sql: 'INSERT INTO endpoint_versions (endpoint_id, version, config, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
      params: [row.id, row.configVersion, JSON.stringify(snapshot), row.updatedAt],
    },
  ];
}

/** A new secret, from the secret the rotation showed (the sealed value it read: each sealing is unique). */
export function rotateSecret(
  e: Pick<EndpointRow, 'id' | 'storeId' | 'secretSealed' | 'secretLast4' | 'previousSecretSealed' | 'previousSecretExpiresAt' | 'updatedAt'>,
  fromSealed: string,
): Write {
  return {
    sql: `UPDATE endpoints SET secret_sealed = ?, secret_last4 = ?, previous_secret_sealed = ?, previous_secret_expires_at = ?, updated_at = ?
          WHERE id = ? AND store_id = ? AND secret_sealed = ? AND status = 'active'`,
    params: [e.secretSealed, e.secretLast4, e.previousSecretSealed, e.previousSecretExpiresAt, e.updatedAt, e.id, e.storeId, fromSealed],
    mustChange: true,
  };
}

/** Archives an active endpoint. */
export function archiveEndpoint(storeId: string, id: string, at: number): Write {
  return {
    sql: "UPDATE endpoints SET status = 'archived', updated_at = ? WHERE id = ? AND store_id = ? AND status = 'active'",
    params: [at, id, storeId],
    mustChange: true,
  };
}

/** Deletes an archived endpoint and its versions; its receipts stay. */
export function deleteArchivedEndpoint(storeId: string, id: string): Write[] {
  return [
    { sql: 'DELETE FROM endpoint_versions WHERE endpoint_id = ? AND endpoint_id IN (SELECT id FROM endpoints WHERE store_id = ?)', params: [id, storeId] },
    { sql: "DELETE FROM endpoints WHERE id = ? AND store_id = ? AND status = 'archived'", params: [id, storeId], mustChange: true },
  ];
}

/**
 * Queues one event for a new attempt now (a replay), from the outcome and attempt count the preview showed.
 * `clearLease`: the storage's lease columns (StorageLayout: PostgreSQL's events also carry a lease token).
 */
export function requeueEvent(eventId: string, from: { outcome: string; attempts: number }, at: number, clearLease: string): Write {
  return {
    sql: `UPDATE events SET outcome = 'queued', code = NULL, next_attempt_at = ?, ${clearLease} WHERE id = ? AND outcome = ? AND attempts = ?`,
    params: [at, eventId, from.outcome, from.attempts],
    mustChange: true,
  };
}

/** A diagnostics share or support request. */
export function insertRecord(r: RecordRow): Write {
  return {
    sql: 'INSERT INTO records (id, store_id, kind, body, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
    params: [r.id, r.storeId, r.kind, r.body, r.createdAt, r.expiresAt],
  };
}

/**
 * One unit on a plan meter, counted with the change it pays for. With a `cap`, the count and the check are one
 * step: the row made at 0 when missing, then raised only while below the cap (a compare-and-set: at the cap it
 * changes nothing and the batch, the change with it, rolls back). PostgreSQL's UPDATE waits for a concurrent
 * count's commit and checks the cap against what it wrote, so executes on any number of instances stop at the cap.
 */
export function countUsage(storeId: string, meter: string, periodStart: number, cap: number | null = null): Write[] {
  if (cap === null) {
    return [
      {
        sql: `INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES (?, ?, ?, 1)
              ON CONFLICT (store_id, meter, period_start) DO UPDATE SET used = usage_counters.used + 1`,
        params: [storeId, meter, periodStart],
      },
    ];
  }
  return [
    {
      sql: 'INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES (?, ?, ?, 0) ON CONFLICT (store_id, meter, period_start) DO NOTHING',
      params: [storeId, meter, periodStart],
    },
    {
      sql: 'UPDATE usage_counters SET used = used + 1 WHERE store_id = ? AND meter = ? AND period_start = ? AND used < ?',
      params: [storeId, meter, periodStart, cap],
      mustChange: true,
    },
  ];
}

/**
 * Claims an intent for execution: `previewed`, or `executing` by `from` (an executor no longer alive, whose change
 * never committed). The confirmation hash stays until the intent ends, so a reopened intent can still be executed.
 */
export async function claimIntent(
  sql: SqlRunner,
  id: string,
  from: { state: 'previewed' } | { state: 'executing'; executor: string },
  to: { executor: string; key: string | null; at: number },
): Promise<boolean> {
  const fence = from.state === 'executing' ? ' AND executor = ?' : '';
  return (
    (await sql.run(`UPDATE intents SET state = 'executing', executor = ?, execute_key = ?, updated_at = ? WHERE id = ? AND state = ?${fence}`, [
      to.executor,
      to.key,
      to.at,
      id,
      from.state,
      ...(from.state === 'executing' ? [from.executor] : []),
    ])) > 0
  );
}

/** Ends an execution that changed nothing: `refused` or `failed`, with its refusal. */
export async function endIntent(
  sql: SqlRunner,
  id: string,
  executor: string,
  state: 'refused' | 'failed',
  refusal: string | null,
  at: number,
): Promise<boolean> {
  return (
    (await sql.run(
      "UPDATE intents SET state = ?, refusal = ?, updated_at = ?, confirmation_hash = NULL WHERE id = ? AND state = 'executing' AND executor = ?",
      [state, refusal, at, id, executor],
    )) > 0
  );
}

/** Puts an execution that changed nothing back to `previewed` (its storage failed): the confirmation works again. */
export async function reopenIntent(sql: SqlRunner, id: string, executor: string, at: number): Promise<boolean> {
  return (
    (await sql.run(
      "UPDATE intents SET state = 'previewed', executor = NULL, execute_key = NULL, updated_at = ? WHERE id = ? AND state = 'executing' AND executor = ?",
      [at, id, executor],
    )) > 0
  );
}

/**
 * Reopens every intent left `executing` by an executor no longer alive (killed mid-execute): nothing it meant to
 * change was committed, so it is `previewed` again. Returns how many.
 */
export async function reopenDeadExecutions(sql: SqlRunner, instance: Instance, at: number): Promise<number> {
  const executors = await sql.all<{ executor: string | null }>("SELECT DISTINCT executor FROM intents WHERE state = 'executing'", []);
  let n = 0;
  for (const { executor } of executors) {
    if (executor !== null && (await instance.alive(executor))) continue;
    n += await sql.run(
      "UPDATE intents SET state = 'previewed', executor = NULL, execute_key = NULL, updated_at = ? WHERE state = 'executing' AND COALESCE(executor, '') = ?",
      [at, executor ?? ''],
    );
  }
  return n;
}

/** Takes over a pending Idempotency-Key claim whose holder is gone (`from`), for `to`. */
export async function takeOverKey(sql: SqlRunner, storeId: string, key: string, from: string | null, to: string, at: number): Promise<boolean> {
  return (
    (await sql.run("UPDATE idempotency_keys SET owner = ?, created_at = ? WHERE store_id = ? AND key = ? AND status = 0 AND COALESCE(owner, '') = ?", [
      to,
      at,
      storeId,
      key,
      from ?? '',
    ])) > 0
  );
}
