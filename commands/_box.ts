/** The SQLite box an admin command works on, and the refusal of a change to a box `migrate --from` moved. */
import { databasePath, locateDatabaseUrl, locateDataDir, openCore } from '../src/boot.ts';
import { storedPublicUrl } from '../src/ops/stores.ts';
import { loadSettings } from '../src/settings.ts';
import type { Core } from '../src/core.ts';
import { refuseChangeIfMoved } from '../src/ops/moved-box.ts';
import { printJson } from './_output.ts';

type StorageFlags = { 'data-dir'?: string; 'database-url'?: string };

/** The SQLite box the command works on (its data directory and database), or null on PostgreSQL. */
export function sqliteBox(args: StorageFlags): { dir: string; file: string } | null {
  if (locateDatabaseUrl(args['database-url'])) return null;
  const dir = locateDataDir(args['data-dir']).path;
  return { dir, file: databasePath(dir) };
}

/** Exit 4 before a command changes a box that was moved (its MOVED file or setting names where it went). */
export function refuseChangeToMovedBox(args: StorageFlags): void {
  const box = sqliteBox(args);
  if (box) refuseChangeIfMoved(box.dir, box.file);
}

/**
 * Opens the box (never creating one), runs `fn` and prints its answer as the command's one JSON document, then
 * closes it. `change`: the command writes, so a moved box is refused first (exit 4).
 */
export async function withCore(args: StorageFlags, fn: (core: Core) => Promise<unknown>, change = true): Promise<void> {
  if (change) refuseChangeToMovedBox(args);
  const core = await openCore({ dataDir: args['data-dir'], databaseUrl: args['database-url'], create: false });
  try {
    printJson(await fn(core));
  } finally {
    await core.repo.close();
  }
}

/**
 * The public URL serve advertises, for the install links these commands print: hookrelay.toml or
 * HOOKRELAY_PUBLIC_URL, else the box-wide setting, else serve's default address.
 */
export async function adoptPublicUrl(core: Core, args: { 'data-dir'?: string }): Promise<void> {
  let explicit: string | undefined;
  try {
    const settings = loadSettings({ file: process.env.HOOKRELAY_CONFIG ?? null, dataDir: locateDataDir(args['data-dir']).path, env: process.env });
    explicit = settings.get('public_url') as string | undefined;
  } catch {
    // A broken hookrelay.toml is serve's to report; the stored setting still names the box.
  }
  core.config.publicUrl = explicit ?? (await storedPublicUrl(core)) ?? core.config.publicUrl;
}
