/**
 * Builds dist/hookrelay: one self-contained executable (migrations bundled; ignores bunfig.toml and .env at run
 * time). The MCP sandbox runs as this same executable (`hookrelay __sandbox`); HOOKRELAY_COMPILED tells it so.
 */

import type { BunPlugin } from 'bun';

/**
 * citty's node:util import, served by commands/_parse-args.ts: node:util is all citty takes from it (parseArgs), and
 * loading it cost every command's cold start 12-30 ms. test/cli/parse-args.test.ts holds the two to the same answers.
 */
const cittyParseArgs: BunPlugin = {
  name: 'citty-parse-args',
  setup(build) {
    const shim = new URL('../commands/_parse-args.ts', import.meta.url).pathname;
    // Bun.build hands builtins to no onResolve hook: citty's source is rewritten as it loads instead.
    build.onLoad({ filter: /[\\/]node_modules[\\/]citty[\\/]dist[\\/].*\.mjs$/ }, async ({ path }) => {
      const source = await Bun.file(path).text();
      return { contents: source.replaceAll(/from\s*["']node:util["']/g, `from ${JSON.stringify(shim)}`), loader: 'js' };
    });
  },
};

/**
 * Bun's own flags for every run of hookrelay: the binary carries them (execArgv), `bun run serve` passes them
 * (package.json; test/cli/imports-at-start.test.ts checks it does) and the bench runs its servers with them.
 * `--smol` collects garbage sooner: peak RSS under ingest 117-118 -> 110 MiB in the quick bench, CPU per receipt
 * unchanged (in-process, three alternating pairs: 84/81.6, 75/74.7, 67/68.6 µs with/without). In the binary, Bun
 * 1.3.14 showed `--smol` in process.execArgv but did not apply it to the heap, so serve sets the heap's equivalent
 * itself (BUN_JSC_largeHeapSize, src/server/runtime-env.ts); Bun 1.4.5 applies it (docs/benchmarks.md, issue 29).
 */
export const RUNTIME_FLAGS = ['--smol'] as const;

/** How the binary's JavaScript is bundled; test/cli/imports-at-start.test.ts reads the same chunks. */
export const BUNDLE = {
  // The relay thread (src/relay/relay-host.ts) is an entry point of its own: a Worker loads it by this path.
  entrypoints: ['./commands/index.ts', './src/relay/relay-thread.ts'],
  // One chunk per lazily imported command: a client command loads its own code, not the server, the database
  // drivers, the MCP SDK or QuickJS that share the binary. Unsplit, every start loaded all of it: `--version`
  // 110 -> 67 ms, `status` 158 -> 117 ms on one (busy) box, before `status` also stopped loading consola, node:fs,
  // node:os and node:path.
  splitting: true,
  format: 'esm',
  define: { 'process.env.NODE_ENV': '"production"', HOOKRELAY_COMPILED: 'true' },
  plugins: [cittyParseArgs],
} as const;

if (import.meta.main) {
  const outfile = process.argv[2] ?? 'dist/hookrelay';
  const result = await Bun.build({
    ...BUNDLE,
    entrypoints: [...BUNDLE.entrypoints],
    plugins: [...BUNDLE.plugins],
    compile: { outfile, autoloadBunfig: false, autoloadDotenv: false, execArgv: [...RUNTIME_FLAGS] },
    minify: true,
    // Precompiled bytecode: the binary starts without parsing its JavaScript (status 110 -> 68 ms, --version
    // 84 -> 48 ms; the file grows by 11 MiB). Bytecode needs an explicit format; ours is ESM (top-level await).
    bytecode: true,
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    process.exit(1);
  }
  console.error(`built ${outfile}`);
}
