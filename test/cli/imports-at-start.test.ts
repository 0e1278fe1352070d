/**
 * What a command loads before it runs, bundled as the binary is (scripts/build.ts): its chunk and every chunk
 * that chunk imports statically. A client command holds no server, database, MCP or sandbox module (a cold
 * `status` paid 100+ ms for them); serve holds none of what only some requests need (the agent API's zod
 * contract, MCP, code mode), which cost its idle resident memory ~20 MiB.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
/** The metafile names modules from the working directory; these tests from the repository root. */
const fromRoot = (p: string) => relative(ROOT, resolve(p));

/** The commands that only talk to a server over HTTP (or to nothing), and the entry itself. */
const CLIENT_COMMANDS = [
  'index',
  'status',
  'whoami',
  'doctor',
  'docs',
  'plan-usage',
  'create-endpoint',
  'events',
  'event',
  'tail',
  'replay-intent',
  'expansion-request',
  'support-request',
  'request',
  'profile',
  'sign',
  'completion',
  'help',
];

/** Reachable from no client command at start: the server, the database and its drivers, MCP, the sandbox. */
const FORBIDDEN =
  /^(db\/|src\/(server|relay|mcp|ops)\/|node_modules\/(drizzle-orm|pg|pg-[a-z0-9-]+|@modelcontextprotocol\/[^/]+|quickjs-emscripten-core|@jitl\/[^/]+)\/)/;
const FORBIDDEN_BUILTINS = new Set(['bun:sqlite', 'pg-native']);
/** `status` and `--version` (the cold starts measured) also load neither zod's contract table nor consola. */
const HEAVY = /^(src\/contract\/(operations|schemas|openapi|manifest)\.ts|node_modules\/(zod|consola)\/)/;
/**
 * Nor node:fs, node:os or node:path (45 ms of a compiled cold start between them): profiles are read with Bun.file.
 * Nor node:util (citty's, served by commands/_parse-args.ts), node:tty or node:stream (process.stdout's).
 */
const HEAVY_BUILTINS = new Set(['fs', 'os', 'path', 'util', 'tty', 'stream', 'node:fs', 'node:os', 'node:path', 'node:util', 'node:tty', 'node:stream']);

type Metafile = NonNullable<Bun.BuildOutput['metafile']>;
let meta: Metafile;
let out: string;

beforeAll(() => {
  out = mkdtempSync(join(tmpdir(), 'hookrelay-chunks-'));
  // In a child process: Bun.build inside `bun test` now and then failed to resolve a relative import (Bun 1.3.14).
  const script = `import { BUNDLE } from './scripts/build.ts';
const r = await Bun.build({ ...BUNDLE, entrypoints: [...BUNDLE.entrypoints], target: 'bun', outdir: process.argv[1], metafile: true });
await Bun.write(process.argv[1] + '/meta.json', JSON.stringify(r.metafile));`;
  const r = Bun.spawnSync(['bun', '-e', script, out], { cwd: ROOT, stderr: 'pipe' });
  if (r.exitCode !== 0) throw new Error(`bundling failed: ${r.stderr.toString()}`);
  meta = JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8'));
}, 60_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** The source modules (paths from the repository root) and builtins loaded when `command`'s chunk is imported. */
function loadedAtStart(command: string): { modules: string[]; builtins: string[] } {
  const entry = Object.keys(meta.outputs).find((o) => fromRoot(meta.outputs[o]!.entryPoint ?? '') === `commands/${command}.ts`);
  if (!entry) throw new Error(`no chunk for commands/${command}.ts`);
  const seen = new Set<string>();
  const stack = [entry];
  while (stack.length) {
    const chunk = stack.pop()!;
    if (seen.has(chunk)) continue;
    seen.add(chunk);
    for (const imp of meta.outputs[chunk]!.imports) if (imp.kind !== 'dynamic-import' && meta.outputs[imp.path]) stack.push(imp.path);
  }
  const inputs = [...seen].flatMap((c) => Object.keys(meta.outputs[c]!.inputs));
  const modules = inputs.map(fromRoot);
  // A builtin's require() stays a call at run time (import.meta.require): only import statements load at start.
  const builtins = inputs.flatMap((m) => (meta.inputs[m]?.imports ?? []).filter((i) => i.external && i.kind === 'import-statement').map((i) => i.path));
  return { modules, builtins: [...new Set(builtins)] };
}

describe('the client commands at start', () => {
  it('are each their own chunk (the binary is split; nothing client-side is inlined into serve)', () => {
    for (const c of CLIENT_COMMANDS) expect(loadedAtStart(c).modules).toContain(`commands/${c}.ts`);
  });

  it('load no server, database, MCP or sandbox module', () => {
    const reached: Record<string, string[]> = {};
    for (const c of CLIENT_COMMANDS) {
      const { modules, builtins } = loadedAtStart(c);
      const bad = [...modules.filter((m) => FORBIDDEN.test(m)), ...builtins.filter((b) => FORBIDDEN_BUILTINS.has(b))];
      if (bad.length) reached[c] = bad;
    }
    expect(reached).toEqual({});
  });

  it('status and the entry load neither the zod contract table, consola, nor node:fs, node:os, node:path, node:util, node:tty or node:stream', () => {
    for (const c of ['index', 'status']) {
      const { modules, builtins } = loadedAtStart(c);
      expect(modules.filter((m) => HEAVY.test(m))).toEqual([]);
      expect(builtins.filter((b) => HEAVY_BUILTINS.has(b))).toEqual([]);
    }
  });

  it('would notice: serve reaches the database and the server', () => {
    const { modules, builtins } = loadedAtStart('serve');
    expect(modules.some((m) => m.startsWith('src/server/'))).toBe(true);
    expect(builtins).toContain('bun:sqlite');
  });
});

/** Loaded by serve with the first request that needs it: the agent API and its zod contract, MCP and code mode. */
const SERVE_LATER =
  /^(node_modules\/(zod|@modelcontextprotocol\/[^/]+|quickjs-emscripten-core|@jitl\/[^/]+)\/|src\/contract\/(schemas|operations|openapi|manifest)\.ts|src\/server\/(agent-api|pipeline|handlers|docs)\.ts|src\/mcp\/)/;

describe('serve at start', () => {
  it('loads the relay, not the agent API, its zod contract, MCP or the code-mode sandbox', () => {
    const { modules } = loadedAtStart('serve');
    expect(modules).toContain('src/server/app.ts');
    expect(modules).toContain('src/relay/inbound.ts');
    expect(modules.filter((m) => SERVE_LATER.test(m))).toEqual([]);
  });
});

describe('the runtime flags', () => {
  it('are the ones `bun run serve` passes (the binary carries them as execArgv)', async () => {
    const { RUNTIME_FLAGS } = await import('../../scripts/build.ts');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.serve).toBe(`bun ${RUNTIME_FLAGS.join(' ')} commands/index.ts serve`);
  });
});
