/** Output a process must finish writing before it exits: buffered log lines held by a sink (stderrLog). */
const writers = new Set<() => Promise<unknown>>();

/** Registers a writer's flush, awaited by `flushBeforeExit`. */
export function flushOnExit(flush: () => Promise<unknown>): void {
  writers.add(flush);
}

/**
 * Resolves once every registered writer has handed its bytes to the OS. A pipe takes 64 KiB at a time: a burst
 * of log lines waits in the sink, and `process.exit` before it drains cut serve's last lines ("stopped").
 */
export async function flushBeforeExit(): Promise<void> {
  await Promise.all([...writers].map((flush) => flush()));
}
