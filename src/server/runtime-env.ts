/**
 * JavaScriptCore options a serve process runs with. JSC reads them from the environment once, as the process
 * starts, so `hookrelay serve` re-executes itself with them (same pid, arguments, descriptors) before it loads
 * anything else. An option the environment already names is left as it is: an operator's own choice stands.
 *
 * `useFTLJIT=0`: JSC's fourth tier (FTL) off; the third (DFG) still optimizes the hot path. serve's JavaScript
 * is glue between native calls (sockets, HMAC, SQLite), and on a box whose one core also serves the requests,
 * FTL compiles (and recompiles after deoptimizations) took the core's time and transient memory: under the
 * bench's ingest load (docs/benchmarks.md, tenth session), paired against FTL on: 0.90–0.92 of the CPU per
 * receipt over 10 s and 0.94–0.95 over 32 s; peak RSS 103.7–105.3 against 112.5–115.6 MiB.
 *
 * `heapGrowthMaxIncrease=1.0`: the heap may grow to about twice what the last collection kept before the next one,
 * where Bun's own setting lets it reach three times on a box with 16 GiB of RAM or more (below that it is twice
 * already). serve keeps little alive; the rest of its heap is each request's garbage waiting for a collection.
 * Under the same load, FTL off in both: peak RSS 92.1–95.0 against 104.2–107.2 MiB, paired 0.97 of the CPU per
 * receipt. Lower settings save little more and, under 0.5, turn eden collections into full ones.
 *
 * `largeHeapSize=1048576`: the compiled binary's `--smol` (its execArgv, scripts/build.ts) shows in
 * process.execArgv but does not reach the heap in Bun 1.3.14: a compiled program allocates as without it (peak
 * 90 MiB against 52 from source with `--smol`, the same test program). Its heap then waits for 32 MiB of
 * allocation before a first collection, where `--smol`'s waits for 1 MiB; this sets the same 1 MiB (inert from
 * source, where `--smol` applies). The compiled serve under the bench's ingest load: peak RSS 93.7–94.1 against
 * 111.6–113.7 MiB, the same CPU per receipt within noise. Bun 1.4.5 applies the binary's `--smol` itself (the same
 * kind of test program: 44.6 MiB compiled with it, 55.8 without, 44.9 with this option too): inert there as well.
 */

import { COMPILED } from '../lib/compiled.ts';

export const SERVE_JSC_ENV: Readonly<Record<string, string>> = {
  BUN_JSC_useFTLJIT: '0',
  BUN_JSC_heapGrowthMaxIncrease: '1.0',
  BUN_JSC_largeHeapSize: '1048576',
};

/** The variables of SERVE_JSC_ENV that `env` does not name. */
export function missingJscEnv(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(SERVE_JSC_ENV).filter(([k]) => env[k] === undefined));
}

/**
 * Replaces this process with itself, SERVE_JSC_ENV added, unless nothing is missing. Call it first thing in a
 * process's entry (never in a test runner: it replaces the process). The compiled binary is started again with
 * its own arguments (it adds its execArgv itself); from source, Bun's flags are in execArgv and go before the script.
 */
export function reexecWithJscEnv(): void {
  const missing = missingJscEnv(process.env);
  if (Object.keys(missing).length === 0 || typeof process.execve !== 'function') return;
  const args = COMPILED ? process.argv.slice(2) : [...process.execArgv, ...process.argv.slice(1)];
  try {
    process.execve(process.execPath, [process.execPath, ...args], { ...process.env, ...missing });
  } catch {
    // A platform without execve: serve runs with JavaScriptCore's defaults, as it did before these options.
  }
}
