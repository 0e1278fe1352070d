/**
 * Bun closes a connection that sends nothing for `idleTimeout` seconds (10 by default), streaming responses
 * included, and sends a streaming response's headers only with its first chunk. The MCP GET stream opens with
 * a comment frame and sends keep-alive comments below the idle timeout. Both servers here close idle
 * connections after 5 s; only the one without keep-alives loses its stream.
 */
import { describe, expect, it } from 'bun:test';
import { DEFAULT_MCP } from '../../src/core.ts';
import { INITIALIZE, rpc, startMcpServer, type McpServerUnderTest } from './harness.ts';

const IDLE_TIMEOUT_SECONDS = 5;
const HOLD_MS = 11_000;

/** A session with its standalone GET stream open: initialize, initialized, GET. */
async function openStream(s: McpServerUnderTest) {
  const { token } = await s.grant();
  const auth = { authorization: `Bearer ${token}` };
  const init = await rpc(s.mcpUrl, INITIALIZE, auth);
  const headers = { ...auth, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
  await rpc(s.mcpUrl, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  const stream = await fetch(s.mcpUrl, { headers: { ...headers, accept: 'text/event-stream' } });
  return { headers, stream };
}

/** Reads the stream for `ms`: the frames seen, and whether it ended (or broke) before then. */
async function readFor(res: Response, ms: number): Promise<{ frames: string[]; ended: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const frames: string[] = [];
  const deadline = Bun.sleep(ms).then(() => 'deadline' as const);
  try {
    for (;;) {
      const r = await Promise.race([reader.read(), deadline]);
      if (r === 'deadline') return { frames, ended: false };
      if (r.done) return { frames, ended: true };
      frames.push(decoder.decode(r.value));
    }
  } catch {
    return { frames, ended: true };
  } finally {
    reader.cancel().catch(() => {});
  }
}

describe('GET /agent/v1/mcp stream', () => {
  it('stays open past the idle timeout with keep-alive frames; without them Bun closes it', async () => {
    const alive = await startMcpServer({ idleTimeoutSeconds: IDLE_TIMEOUT_SECONDS, mcp: { ...DEFAULT_MCP, keepAliveMs: 1000 } });
    const control = await startMcpServer({ idleTimeoutSeconds: IDLE_TIMEOUT_SECONDS, mcp: { ...DEFAULT_MCP, keepAliveMs: 0 } });
    try {
      const [a, c] = await Promise.all([openStream(alive), openStream(control)]);
      expect(a.stream.status).toBe(200);
      expect(a.stream.headers.get('content-type')).toBe('text/event-stream');
      const [kept, dropped] = await Promise.all([readFor(a.stream, HOLD_MS), readFor(c.stream, HOLD_MS)]);

      expect(kept.ended).toBe(false);
      const text = kept.frames.join('');
      expect(text).toStartWith(': open\n\n');
      expect(text.split(': keepalive\n\n').length - 1).toBeGreaterThanOrEqual(HOLD_MS / 1000 - 2);

      expect(dropped.ended).toBe(true);
      expect(dropped.frames.join('')).toBe(': open\n\n');

      const list = await rpc(alive.mcpUrl, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, a.headers);
      expect(list.status).toBe(200);
      expect(((await list.json()) as any).result.tools).toHaveLength(2);
    } finally {
      await Promise.all([alive.stop(), control.stop()]);
    }
  }, 30_000);
});
