/** Applies bundled migrations in order, each in its own transaction, recording them by tag. */
export interface Migration {
  tag: string;
  when: number;
  sql: string;
}

/** The few statements a migrator needs; both dialects' drivers provide them. */
export interface MigrationTarget {
  exec(sql: string): void | Promise<void>;
  appliedTags(): string[] | Promise<string[]>;
  apply(m: Migration, statements: string[]): void | Promise<void>;
}

function splitStatements(sql: string): string[] {
  return sql
    .split('--> statement-breakpoint')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Returns the tags applied by this call (empty when already up to date). */
export async function runMigrations(target: MigrationTarget, migrations: Migration[]): Promise<string[]> {
  const applied = new Set(await target.appliedTags());
  const done: string[] = [];
  for (const m of migrations) {
    if (applied.has(m.tag)) continue;
    await target.apply(m, splitStatements(m.sql));
    done.push(m.tag);
  }
  return done;
}
