/** What every operation handler receives: the authenticated store and grant, and the runtime. */
import type { GrantRow, StoreRow } from '../../db/types.ts';
import type { Scope } from '../contract/scopes.ts';
import type { Core } from '../core.ts';

export interface Actor {
  kind: 'agent' | 'human';
  grantId: string | null;
  label: string;
}

export interface OpContext {
  core: Core;
  store: StoreRow;
  grant: GrantRow;
  scopes: Scope[];
  actor: Actor;
  requestId: string;
  /** Tells the inbound path that an endpoint changed (drops its cached config and secret). */
  endpointChanged(id: string): void;
}
