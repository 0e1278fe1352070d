/** What every operation handler receives: the authenticated store and grant, and the runtime. */
import type { Repo } from '../../db/repo.ts';
import type { GrantRow, StoreRow } from '../../db/types.ts';
import type { Scope } from '../contract/scopes.ts';
import type { CoreWith } from '../core.ts';

export interface Actor {
  kind: 'agent' | 'human';
  grantId: string | null;
  label: string;
}

/**
 * Who a call's limits, intents and folds are keyed to: the grant (an agent), or the human by their actor label
 * (a merchant acting from the seat, who holds no grant). The two never collide: grant ids are `gr_…`.
 */
export function holderOf(p: { grant: GrantRow | null; actor: Actor }): string {
  return p.grant ? p.grant.id : `human:${p.actor.label}`;
}

/**
 * `R`: the storage areas a handler uses (db/repo.ts); the pipeline passes the whole Repo. `grant` is null for a
 * human acting from the merchant's seat (actor kind `human`).
 */
export interface OpContext<R = Repo> {
  core: CoreWith<R>;
  store: StoreRow;
  grant: GrantRow | null;
  scopes: Scope[];
  actor: Actor;
  requestId: string;
  /** The request's Idempotency-Key, when it sent one: an intent's execute records it, so its retry gets the outcome. */
  idempotencyKey?: string;
  /** Tells the inbound path that an endpoint changed (drops its cached config and secret). */
  endpointChanged(id: string): void;
}
