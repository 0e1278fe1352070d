/** Runs drizzle-kit generate, then writes db/migrations/<dialect>/index.ts so migrations are bundled into the binary. */
import { $ } from 'bun';
import { writeMigrationIndex } from '../db/migration-index.ts';

const name = process.argv[2];
for (const dialect of ['sqlite', 'pg'] as const) {
  const config = `db/drizzle.${dialect}.config.ts`;
  if (name) await $`bunx drizzle-kit generate --config ${config} --name ${name}`;
  else await $`bunx drizzle-kit generate --config ${config}`;
  await Bun.write(`db/migrations/${dialect}/index.ts`, await writeMigrationIndex(`db/migrations/${dialect}`));
}
