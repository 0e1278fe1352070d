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
 */

declare const HOOKRELAY_COMPILED: boolean | undefined;

export const SERVE_JSC_ENV: Readonly<Record<string, string>> = { BUN_JSC_useFTLJIT: '0' };

/** The variables of SERVE_JSC_ENV that `env` does not name. */
export function missingJscEnv(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(SERVE_JSC_ENV).filter(([k]) => env[k] === undefined));
}

/**
 * Replaces this process with itself, SERVE_JSC_ENV added, unless nothing is missing. Call it first thing in a
 * process's entry (never in a test runner: it replaces the process). The compiled binary carries its runtime
 * flags (`--smol`) itself; from source they are in execArgv and go before the script.
 */
export function reexecWithJscEnv(): void {
  const missing = missingJscEnv(process.env);
  if (Object.keys(missing).length === 0 || typeof process.execve !== 'function') return;
  const compiled = typeof HOOKRELAY_COMPILED !== 'undefined' && HOOKRELAY_COMPILED;
  const args = compiled ? process.argv.slice(2) : [...process.execArgv, ...process.argv.slice(1)];
  try {
    process.execve(process.execPath, [process.execPath, ...args], { ...process.env, ...missing });
  } catch {
    // A platform without execve: serve runs with JavaScriptCore's defaults, as it did before these options.
  }
}
