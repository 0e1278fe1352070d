/** stdout carries exactly one JSON document per command: pretty on a TTY, compact otherwise. */
export function printJson(doc: unknown): void {
  const text = process.stdout.isTTY ? JSON.stringify(doc, null, 2) : JSON.stringify(doc);
  process.stdout.write(`${text}\n`);
}
