/**
 * The seat's pages, in nav order: one line per page — its path under the base (`''` is Home), its nav title, and its
 * module (loaded with its first request), which exports `page: SeatPage`; `items` when paths under it are its too.
 */
import type { SeatPage } from '../types.ts';

export interface PageEntry {
  path: string;
  title: string;
  /** Its path takes paths under it (`/endpoints/<id>`); a page without is its one path, and under it is not found. */
  items?: true;
  load(): Promise<{ page: SeatPage }>;
}

export const PAGES: readonly PageEntry[] = [
  { path: '', title: 'Home', load: () => import('./home.ts') },
  { path: '/events', title: 'Events', load: () => import('./events.ts') },
  { path: '/recovery', title: 'Recovery', load: () => import('./recovery.ts') },
  { path: '/plan', title: 'Plan', load: () => import('./plan.ts') },
  { path: '/endpoints', title: 'Endpoints', items: true, load: () => import('./endpoints.ts') },
  { path: '/agents', title: 'Agents', load: () => import('./agents.ts') },
  { path: '/audit', title: 'Audit', load: () => import('./audit.ts') },
];
