/**
 * README's folder map stays true: every folder it names exists, and every top-level folder of the repository and
 * every folder of src/ and db/ has a row (or is named in its parent's row), so a newcomer's map has no blank room.
 */
import { describe, expect, it } from 'bun:test';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '..', '..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const map = readme.slice(readme.indexOf('## Folder map'));
const section = map.slice(0, map.indexOf('\n## ', 4) === -1 ? undefined : map.indexOf('\n## ', 4));

/** The first cell of each table row: `src/relay/`, `.ci/run`… */
const rows = [...section.matchAll(/^\| `([^`]+)` \|(.*)\|$/gm)].map((m) => ({ path: m[1]!, text: m[2]! }));

/**
 * The repository's files, as git tracks them: a folder that holds none (dependencies, a build, the bench's results
 * and profiles, all git-ignored) is no room of the map. Null outside a git checkout.
 */
const tracked = (() => {
  const git = Bun.spawnSync(['git', 'ls-files', '-z'], { cwd: ROOT, stderr: 'ignore' });
  return git.success ? git.stdout.toString().split('\0').filter(Boolean) : null;
})();

/** The folders of `dir` (`.` for the top level) that hold a tracked file; without git, those on disk but the ignored ones. */
const dirs = (dir: string) => {
  if (!tracked) {
    return readdirSync(join(ROOT, dir), { withFileTypes: true })
      .filter((d) => d.isDirectory() && !['node_modules', 'dist', '.git', 'bench'].includes(d.name))
      .map((d) => d.name);
  }
  const prefix = dir === '.' ? '' : `${dir}/`;
  const inside = tracked.filter((f) => f.startsWith(prefix) && f.indexOf('/', prefix.length) > 0);
  return [...new Set(inside.map((f) => f.slice(prefix.length, f.indexOf('/', prefix.length))))];
};

describe('README folder map', () => {
  it('has rows, and every folder or file it names exists', () => {
    expect(rows.length).toBeGreaterThan(10);
    for (const { path } of rows) expect({ path, exists: existsSync(join(ROOT, path)) }).toEqual({ path, exists: true });
  });

  it('has a row for every top-level folder and every folder of src/', () => {
    const named = new Set(rows.map((r) => r.path.replace(/\/.*$/, '')));
    for (const d of dirs('.').filter((d) => !d.startsWith('.'))) expect({ d, named: named.has(d) }).toEqual({ d, named: true });
    const rowsOfSrc = new Set(rows.map((r) => r.path));
    for (const d of dirs('src')) expect({ d, row: rowsOfSrc.has(`src/${d}/`) }).toEqual({ d, row: true });
  });

  it("names every folder of db/ in db/'s row", () => {
    const db = rows.find((r) => r.path === 'db/');
    expect(db).toBeDefined();
    for (const d of dirs('db')) expect({ d, named: db!.text.includes(`${d}/`) }).toEqual({ d, named: true });
  });
});
