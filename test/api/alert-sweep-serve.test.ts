/** serve runs the alert sweep with its worker, on the core's clock, and waits for a sweep in flight before it stops. */
import { describe, expect, it } from 'bun:test';
import { startServer } from '../../src/server/serve.ts';
import { until } from '../fixtures/handoff.ts';
import { addGrant, addStore, count, createEndpoint, createTestEnv } from '../helpers.ts';

describe('serve and the alert sweep', () => {
  it('raises a silence alert on its own (a log store marks its phase skipped), and not without a worker', async () => {
    for (const worker of [true, false]) {
      const env = await createTestEnv();
      await addStore(env);
      const token = await addGrant(env, 'operator');
      await createEndpoint(env, token, { triggerVariant: 'generic', expectedEvery: '5m' });
      env.clock.advance(6 * 60_000);
      const running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker, alertSweepMs: 20, logRequests: false });
      try {
        if (worker) {
          await until(async () => (await count(env, 'alert_handoffs', "state = 'skipped'")) === 1);
          expect(await count(env, 'alerts', "kind = 'silence' AND state = 'open'")).toBe(1);
          expect(env.log.lines.some((l) => l.includes('alert raised'))).toBe(true);
        } else {
          await Bun.sleep(200);
          expect(await count(env, 'alerts')).toBe(0);
        }
      } finally {
        await running.stop();
      }
    }
  });
});
