/** Prints the OpenAPI document, or with --write refreshes the committed snapshot docs/openapi.json. */
import { buildOpenApi } from '../src/contract/openapi.ts';

export const SNAPSHOT_PATH = 'docs/openapi.json';
export const SNAPSHOT_SERVER = 'http://127.0.0.1:8787';

if (import.meta.main) {
  const text = `${JSON.stringify(buildOpenApi(SNAPSHOT_SERVER), null, 2)}\n`;
  if (process.argv.includes('--write')) await Bun.write(SNAPSHOT_PATH, text);
  else process.stdout.write(text);
}
