import { describe, expect, it } from 'bun:test';
import { startServer } from '../../src/server/serve.ts';
import { createTestEnv } from '../helpers.ts';

describe('serve', () => {
  it('runs Bun.serve in production mode whatever NODE_ENV says (no development error pages)', async () => {
    const saved = process.env.NODE_ENV;
    process.env.NODE_ENV = 'development';
    const env = await createTestEnv();
    const running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false, logRequests: false });
    try {
      expect(running.server.development).toBe(false);
      const res = await fetch(`${running.url}/no/such/route`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
    } finally {
      await running.stop();
      if (saved === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = saved;
    }
  });
});
