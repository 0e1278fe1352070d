/**
 * The one place each dialect is named (as pg-boss keeps one object per dialect): where the two schemas differ for
 * the areas written once (db/areas/). An area asks its runner's dialect (SqlRunner.dialect) for these instead of
 * testing which dialect it runs on. The SQL of the areas is otherwise the same on both: portable upserts
 * (`ON CONFLICT … DO UPDATE SET col = excluded.col`) and sums cast `AS BIGINT` (see db/runner.ts) need no entry here.
 */
export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /** The SET list that ends an event's lease (PostgreSQL's events also carry the claim's token). */
  readonly clearLease: string;
  /**
   * How event_bodies is keyed: SQLite by an integer the event row holds (`events.body_key`, cleared with the body
   * so a key used again never leads back), PostgreSQL by the event id.
   */
  readonly bodyKey: 'integer' | 'event-id';
  /**
   * Whether an INSERT may run inside WITH (PostgreSQL's data-modifying CTE): writes to two tables as one statement,
   * atomic and one round trip. SQLite has none: there they are a batch, one transaction.
   */
  readonly insertInWith: boolean;
}

export const SQLITE: Dialect = { name: 'sqlite', clearLease: 'lease_until = NULL', bodyKey: 'integer', insertInWith: false };

export const POSTGRES: Dialect = { name: 'postgres', clearLease: 'lease_until = NULL, lease_token = NULL', bodyKey: 'event-id', insertInWith: true };
