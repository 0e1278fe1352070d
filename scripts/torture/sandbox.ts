/**
 * Part 4, sandbox abuse: MCP `execute` (the SDK's own client, Streamable HTTP) with code that exhausts memory,
 * CPU, the stack or the result limit, under an observer grant; a server that dies is counted and restarted.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Box, log } from './_box.ts';

export interface SandboxOptions {
  bin: string;
  /** How many times the whole set runs. */
  rounds: number;
  keep: boolean;
}

export interface SandboxRun {
  name: string;
  /** What came back: the tool's error code, `ok`, or the transport error. */
  answer: string;
  died: boolean;
  /** The dead server's exit code or signal. */
  exit?: string;
}

export interface SandboxFigures {
  runs: number;
  deaths: number;
  restarts: number;
  results: SandboxRun[];
}

/** The abuse set of issue 13: each must end as a stable tool error while the server stays up. */
const ABUSE: [name: string, code: string][] = [
  ['memory growth after an await', 'await null; const a = []; for (;;) a.push(new Array(1e6).fill(1.5));'],
  [
    'an api.call, then a 20 MiB body',
    "await api.call('getSetupState', {}); const big = 'x'.repeat(20 * 1024 * 1024); await api.call('createFeatureRequest', { body: { capability: 'torture', problem: big } }); return 'sent';",
  ],
  ['memory growth, synchronous', 'const a = []; for (;;) a.push(new Array(1e6).fill(1.5));'],
  ['string doubling', "let s = 'x'; for (;;) s += s;"],
  ['infinite loop', 'for (;;) {}'],
  ['deep recursion', 'function f(n) { return f(n + 1) + 1; } return f(0);'],
  ['huge string result', "return 'x'.repeat(30 * 1024 * 1024);"],
  ['huge array result', 'return Array.from({ length: 2e6 }, (_, i) => i);'],
];

const SHOP = 'sandbox.myshopify.com';
const CALL_TIMEOUT_MS = 60_000;

async function connect(box: Box, token: string): Promise<Client> {
  const client = new Client({ name: 'hookrelay-torture', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/agent/v1/mcp', box.base), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return client;
}

async function runOne(client: Client, code: string): Promise<string> {
  try {
    const r = await client.callTool({ name: 'execute', arguments: { code } }, undefined, { timeout: CALL_TIMEOUT_MS });
    const text = (r.content as { type: string; text?: string }[])[0]?.text ?? '';
    if (!r.isError) return 'ok';
    try {
      const doc = JSON.parse(text);
      return String(doc.error?.code ?? doc.code ?? 'error');
    } catch {
      return `error: ${text.slice(0, 80)}`;
    }
  } catch (err) {
    return `transport: ${(err instanceof Error ? err.message : String(err)).slice(0, 100)}`;
  }
}

export async function sandboxPart(o: SandboxOptions): Promise<SandboxFigures> {
  const box = new Box({ bin: o.bin, name: 'sandbox' });
  const results: SandboxRun[] = [];
  let restarts = 0;
  let client: Client | null = null;
  try {
    box.initStore(SHOP);
    const token = box.issueGrant(SHOP, 'observer');
    await box.start();
    for (let round = 0; round < o.rounds; round++) {
      for (const [name, code] of ABUSE) {
        client ??= await connect(box, token);
        const answer = await runOne(client, code);
        await Bun.sleep(300); // a dying process may take a moment to exit
        const died = !box.alive() || !(await box.statusOk());
        const run: SandboxRun = { name, answer, died };
        if (died) {
          await box.kill9(); // a wedged server that no longer answers /status counts as dead too
          run.exit = String(box.proc?.exitCode ?? box.proc?.signalCode ?? 'unknown');
          await client.close().catch(() => {});
          client = null;
          await box.start();
          restarts++;
        }
        log(`sandbox: ${name}: ${answer}${died ? ` — server died (exit ${run.exit}), restarted` : ''}`);
        results.push(run);
      }
    }
    return { runs: results.length, deaths: results.filter((r) => r.died).length, restarts, results };
  } finally {
    await client?.close().catch(() => {});
    await box.dispose(o.keep);
  }
}
