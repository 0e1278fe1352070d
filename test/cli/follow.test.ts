/** `events --follow` / `tail` against a real server in this process: each new receipt once, oldest first, Ctrl-C → 0. */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { followEvents } from '../../src/client/follow.ts';
import { HookrelayClient } from '../../src/client/http.ts';
import type { EventSummary } from '../../src/contract/schemas.ts';
import { createEndpoint, orderEvent, sendHook } from '../helpers.ts';
import { ENTRY, scratchHome, spawnCli, startApi, type Api } from './harness.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

let api: Api;
let home: ReturnType<typeof scratchHome>;
let token: string;
let endpoint: Awaited<ReturnType<typeof createEndpoint>>;

beforeAll(async () => {
  api = await startApi();
  home = scratchHome();
  token = await api.grant('operator');
  endpoint = await createEndpoint(api.env, token);
});

afterAll(async () => {
  await api.stop();
  home.cleanup();
});

/** Reads a child's stream line by line as it arrives. */
function lines(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  return {
    all: () => buf,
    async until(pred: (text: string) => boolean): Promise<string> {
      while (!pred(buf)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before the expected output:\n${buf}`);
        buf += decoder.decode(value, { stream: true });
      }
      return buf;
    },
  };
}

async function send(ext: string): Promise<string> {
  const r = await sendHook(api.env, endpoint.endpoint, endpoint.secret, orderEvent(ext));
  expect(r.status).toBe(202);
  return r.json.eventId;
}

describe('events --follow', () => {
  it('prints only receipts after it started, one compact JSON line each, oldest first, and exits 0 on SIGINT', async () => {
    const token = await api.grant('observer');
    const before = await send('f-before');
    const proc = spawnCli(['events', '--follow', '--interval', '0.3'], { home: home.dir, env: { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token } });
    const out = lines(proc.stdout);
    const err = lines(proc.stderr);
    await err.until((t) => t.includes('Following new receipts'));
    const ids = [await send('f-1'), await send('f-2'), await send('f-3')];
    const text = await out.until((t) => t.split('\n').filter(Boolean).length >= 3);
    proc.kill('SIGINT');
    expect(await proc.exited).toBe(0);
    const printed = text.split('\n').filter(Boolean);
    for (const line of printed) expect(line).toBe(JSON.stringify(JSON.parse(line)));
    expect(printed.map((l) => JSON.parse(l).id)).toEqual(ids);
    expect(printed.join('')).not.toContain(before);
    expect(printed.map((l) => JSON.parse(l).externalEventId)).toEqual(['f-1', 'f-2', 'f-3']);
  }, 60_000);

  it('tail is the same stream; --follow refuses page flags (exit 2)', async () => {
    const token = await api.grant('observer');
    const proc = spawnCli(['tail', '--endpoint', endpoint.endpoint.id, '--interval', '0.3'], {
      home: home.dir,
      env: { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token },
    });
    const out = lines(proc.stdout);
    await lines(proc.stderr).until((t) => t.includes('Following new receipts'));
    const id = await send('t-1');
    await out.until((t) => t.includes('\n'));
    proc.kill('SIGINT');
    expect(await proc.exited).toBe(0);
    expect(JSON.parse(out.all().trim()).id).toBe(id);

    const refused = spawnCli(['events', '--follow', '--limit', '5'], { home: home.dir, env: { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token } });
    expect(await refused.exited).toBe(2);
    expect(JSON.parse(await new Response(refused.stdout).text()).error.message).toContain('--limit');
  }, 60_000);
});

describe('tail into a reader that stops', () => {
  it('ends (exit 0) once the reader is gone, as `hookrelay tail | head -1` should', async () => {
    const token = await api.grant('observer');
    const proc = Bun.spawn(['bash', '-o', 'pipefail', '-c', `bun '${ENTRY}' tail --interval 0.3 | head -1`], {
      cwd: home.dir,
      env: { PATH: process.env.PATH ?? '', HOME: home.dir, NO_COLOR: '1', HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    await lines(proc.stderr).until((t) => t.includes('Following new receipts'));
    let exited = false;
    void proc.exited.then(() => (exited = true));
    for (let i = 0; !exited; i++) {
      await send(`h-${i}`);
      await Bun.sleep(300);
    }
    expect(await proc.exited).toBe(0);
    expect(JSON.parse(await new Response(proc.stdout).text()).externalEventId).toBe('h-0');
  }, 60_000);
});

describe('followEvents', () => {
  it('reads every page of a poll, skips nothing, repeats nothing, and waits out a 429 for its Retry-After', async () => {
    const reader = await api.grant('observer');
    const other = await createEndpoint(api.env, token);
    const sent: string[] = [];
    // More than two pages of 100 are already there when it starts from --since.
    for (let i = 0; i < 230; i++) sent.push((await sendHook(api.env, other.endpoint, other.secret, orderEvent(`p-${i}`))).json.eventId);
    // A loopback proxy in front of the real server that answers the second call with a 429.
    let calls = 0;
    const proxy = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (req) => {
        if (++calls === 2)
          return Response.json(
            { error: { code: 'rate_limited', message: 'slow down' }, retryAfterSeconds: 1 },
            { status: 429, headers: { 'retry-after': '1' } },
          );
        const url = new URL(req.url);
        return fetch(`${api.url}${url.pathname}${url.search}`, { headers: req.headers });
      },
    });
    try {
      const client = new HookrelayClient({ baseUrl: `http://127.0.0.1:${proxy.port}`, token: reader });
      const stop = new AbortController();
      const got: EventSummary[] = [];
      const waits: number[] = [];
      const done = followEvents(client, {
        endpointId: other.endpoint.id,
        sinceMs: api.env.clock.now() - 60_000,
        intervalMs: 300,
        signal: stop.signal,
        onRateLimited: (s) => waits.push(s),
        onEvent: (e) => {
          got.push(e);
        },
      });
      while (got.length < sent.length) await Bun.sleep(20);
      for (let i = 0; i < 3; i++) sent.push((await sendHook(api.env, other.endpoint, other.secret, orderEvent(`q-${i}`))).json.eventId);
      while (got.length < sent.length) await Bun.sleep(20);
      const polls = calls;
      while (calls < polls + 3) await Bun.sleep(20);
      stop.abort();
      await done;
      expect(waits).toEqual([1]);
      expect(got.map((e) => e.id)).toEqual(sent);
    } finally {
      proxy.stop(true);
    }
  }, 60_000);
});
