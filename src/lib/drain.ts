/**
 * Output a process must finish writing before it exits: stdout writes a pipe has not taken yet, log lines waiting
 * for their logger, lines buffered in a sink (stderrLog). A pipe takes 64 KiB at a time: `process.exit` before it
 * drains cut `audit --limit 100000 | wc -c` at 65,536 bytes, and a burst of log lines left serve's last ("stopped")
 * in the sink. The CLI's entry awaits flushBeforeExit.
 */
const pending = new Set<Promise<void>>();
const writers = new Set<() => Promise<unknown>>();

/** Remembers work that writes before the process may exit; its failure is not awaited as an error. */
export function track(work: Promise<unknown>): void {
  const done = work.then(
    () => {},
    () => {},
  );
  pending.add(done);
  void done.then(() => pending.delete(done));
}

/** Registers a writer's flush (a sink that buffers), called and awaited by flushBeforeExit. */
export function flushOnExit(flush: () => Promise<unknown>): void {
  writers.add(flush);
}

/** Resolves once every tracked write and every registered writer has handed its bytes to the OS. */
export async function flushBeforeExit(): Promise<void> {
  while (pending.size) await Promise.all([...pending]);
  await Promise.all([...writers].map((flush) => flush()));
}
