/**
 * Layers point one way (STYLE.md): every import statement of every .ts file under src/, db/ and commands/ is
 * read and checked against the rules below; a violation is reported as `file:line imports target (why)`.
 */
import { describe, expect, it } from 'bun:test';
import { Glob } from 'bun';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
const SCANNED = ['src', 'db', 'commands'];

interface Rule {
  /** Files whose repository path starts with this. */
  from: string;
  /** Folders (path prefixes) those files must not import. */
  not: string[];
  why: string;
}

/**
 * What each layer must not import. db/ imports nothing outside db/ (today it uses neither src/contract nor
 * src/lib), and src/contract is the leaf every layer may read. Packages (`zod`, `bun:sqlite`) are not checked.
 */
const RULES: Rule[] = [
  { from: 'db/', not: ['src/', 'commands/', 'scripts/', 'test/'], why: 'db/ knows nothing above it' },
  { from: 'src/contract/', not: ['src/', 'db/', 'commands/'], why: 'src/contract is read by every layer and reads none' },
  {
    from: 'src/relay/',
    not: ['src/ops/', 'src/server/', 'src/mcp/', 'src/seat/', 'src/client/', 'commands/'],
    why: 'the hot path does not import the agent-API pipeline',
  },
  { from: 'src/mcp/', not: ['src/server/', 'commands/'], why: 'the MCP endpoint receives what it needs of the server from the app' },
  { from: 'src/ops/', not: ['src/server/', 'src/mcp/', 'src/seat/', 'commands/'], why: 'src/ops sits below the server, the MCP endpoint and the seat' },
  {
    from: 'src/oauth/',
    not: ['src/server/', 'src/mcp/', 'src/seat/', 'commands/'],
    why: 'the authorization server sits beside src/ops: the seat and the app call it, it calls neither',
  },
  { from: 'src/seat/', not: ['src/server/', 'src/mcp/', 'commands/'], why: "the merchant's seat receives invoke from the app, as the MCP endpoint does" },
  {
    from: 'src/platform/',
    not: ['src/ops/', 'src/server/', 'src/mcp/', 'src/seat/', 'src/client/', 'src/relay/', 'commands/'],
    why: 'a platform module is called by the relay and the ops and calls neither (one folder per platform)',
  },
  {
    from: 'src/lib/',
    not: ['src/ops/', 'src/server/', 'src/mcp/', 'src/seat/', 'src/relay/', 'src/client/', 'commands/'],
    why: 'src/lib is shared below every layer',
  },
  { from: 'src/', not: ['commands/'], why: 'commands/ is the entry; nothing imports it' },
  // Storage is sealed: above db/, storage is the Repo's areas (db/repo.ts); the SQL runner and the dialect stay below.
  ...['src/', 'commands/'].map((from) => ({
    from,
    not: ['db/runner.ts', 'db/dialect.ts'],
    why: 'nothing above db/ reaches a SQL runner or names a dialect: storage is the areas of db/repo.ts',
  })),
];

/**
 * A platform's folder (src/platform/<name>/) is imported from inside it and by the registry only: everything else
 * asks the registry for the store's platform, and no platform imports another's folder.
 */
const PLATFORM_FOLDER = /^src\/platform\/[^/]+\//;
const REGISTRY = 'src/platform/registry.ts';

interface Import {
  line: number;
  /** Repository path of the imported file, or `..`-prefixed when it leaves the repository. */
  target: string;
}

// `import … from '…'` and `export … from '…'` starting a line (a clause may span lines), `import '…'`, and
// `import('…')` anywhere (lazy imports, `import('…').Type`). Type-only imports count: they tie layers together too.
const CLAUSE = String.raw`(?:[\w$]+(?:\s*,\s*(?:\{[^}]*\}|\*\s*as\s+[\w$]+))?|\{[^}]*\}|\*(?:\s*as\s+[\w$]+)?)`;
const FROM = new RegExp(String.raw`^[ \t]*(?:import|export)(?:[ \t]+type)?\s*${CLAUSE}\s*from\s*(['"])([^'"\n]+)\1`, 'gm');
const BARE = /^[ \t]*import[ \t]*(['"])([^'"\n]+)\1/gm;
const DYNAMIC = /\bimport\(\s*(['"])([^'"\n]+)\1\s*\)/g;

/** The relative imports of one file, resolved to repository paths. */
function importsOf(path: string, text: string): Import[] {
  const out: Import[] = [];
  const lineAt = (index: number) => text.slice(0, index).split('\n').length;
  for (const re of [FROM, BARE, DYNAMIC]) {
    for (const m of text.matchAll(re)) {
      const spec = m[2]!;
      if (!spec.startsWith('.')) continue;
      // The line of the specifier, not of `import {` opening a clause over several lines.
      out.push({ line: lineAt(m.index! + m[0].lastIndexOf(spec)), target: normalize(join(dirname(path), spec)) });
    }
  }
  return out.sort((a, b) => a.line - b.line);
}

/** Every import that points the wrong way, as `file:line imports target (why)`. A folder may always import itself. */
function violations(files: { path: string; text: string }[]): string[] {
  const out: string[] = [];
  for (const { path, text } of files) {
    for (const { line, target } of importsOf(path, text)) {
      if (target.startsWith('..')) {
        out.push(`${path}:${line} imports ${target} (outside the repository)`);
        continue;
      }
      const folder = PLATFORM_FOLDER.exec(target)?.[0];
      if (folder && path !== REGISTRY && !path.startsWith(folder))
        out.push(`${path}:${line} imports ${target} (only src/platform/registry.ts imports a platform's folder)`);
      for (const rule of RULES) {
        if (!path.startsWith(rule.from) || target.startsWith(rule.from)) continue;
        const bad = rule.not.find((prefix) => target.startsWith(prefix));
        if (bad) out.push(`${path}:${line} imports ${target} (${rule.why})`);
      }
    }
  }
  return out;
}

function sources(): { path: string; text: string }[] {
  return SCANNED.flatMap((dir) =>
    [...new Glob('**/*.ts').scanSync(join(ROOT, dir))].map((f) => ({ path: `${dir}/${f}`, text: readFileSync(join(ROOT, dir, f), 'utf8') })),
  );
}

describe('layers', () => {
  it('no import under src/, db/ or commands/ points the wrong way', () => {
    const files = sources();
    expect(files.length).toBeGreaterThan(100);
    expect(violations(files)).toEqual([]);
  });

  it('reads the imports the code really has, type-only, multi-line and dynamic ones included', () => {
    const files = new Map(sources().map((f) => [f.path, f.text]));
    const targets = (path: string) => importsOf(path, files.get(path)!).map((i) => i.target);
    // `import type { Repo } from '../db/repo.ts'` on one line.
    expect(targets('src/core.ts')).toContain('db/repo.ts');
    // `import type {` with its names and `} from` on the lines after.
    expect(targets('db/sqlite/repo.ts')).toContain('db/types.ts');
    // `() => import('./serve.ts')` in the lazily loaded command table.
    expect(targets('commands/index.ts')).toContain('commands/serve.ts');
    // A generated import inside a string is not an import of the generator.
    expect(targets('db/migration-index.ts')).toEqual([]);
  });

  it("lets only the registry import a platform's folder", () => {
    const planted = [
      { path: 'src/ops/stores.ts', text: "import { shopifyPlatform } from '../platform/shopify/platform.ts';\n" },
      { path: 'commands/serve.ts', text: "const m = await import('../src/platform/shopify/app.ts');\n" },
      { path: 'src/platform/log/index.ts', text: "import { flow } from '../shopify/index.ts';\n" },
      {
        path: 'src/relay/worker.ts',
        text: "import { logDestination } from '../platform/log/destination.ts';\nimport { platformOf } from '../platform/registry.ts';\n",
      },
      { path: 'src/platform/registry.ts', text: "import { logPlatform } from './log/index.ts';\nimport { shopify } from './shopify/index.ts';\n" },
      { path: 'src/platform/shopify/index.ts', text: "import { shopifyPlatform } from './platform.ts';\nimport type { Platform } from '../types.ts';\n" },
    ];
    expect(violations(planted)).toEqual([
      "src/ops/stores.ts:1 imports src/platform/shopify/platform.ts (only src/platform/registry.ts imports a platform's folder)",
      "commands/serve.ts:1 imports src/platform/shopify/app.ts (only src/platform/registry.ts imports a platform's folder)",
      "src/platform/log/index.ts:1 imports src/platform/shopify/index.ts (only src/platform/registry.ts imports a platform's folder)",
      "src/relay/worker.ts:1 imports src/platform/log/destination.ts (only src/platform/registry.ts imports a platform's folder)",
    ]);
  });

  it('names the file and line of each import that points the wrong way', () => {
    const planted = [
      { path: 'src/relay/worker.ts', text: "/** x */\nimport { releaseHeld } from '../ops/usage.ts';\n" },
      { path: 'src/relay/inbound.ts', text: "import type {\n  Core,\n} from '../server/app.ts';\n" },
      { path: 'src/mcp/endpoint.ts', text: "const { audit } = await import('../server/pipeline.ts');\n" },
      { path: 'db/open.ts', text: "export { AppError } from '../src/contract/errors.ts';\n" },
      { path: 'src/contract/limits.ts', text: "import type { Core } from '../core.ts';\n" },
      { path: 'src/lib/x.ts', text: "import '../../../outside.ts';\n" },
      { path: 'src/server/app.ts', text: "import { HandoffWorker } from '../relay/worker.ts';\nimport { audit } from '../mcp/server.ts';\n" },
    ];
    expect(violations(planted)).toEqual([
      'src/relay/worker.ts:2 imports src/ops/usage.ts (the hot path does not import the agent-API pipeline)',
      'src/relay/inbound.ts:3 imports src/server/app.ts (the hot path does not import the agent-API pipeline)',
      'src/mcp/endpoint.ts:1 imports src/server/pipeline.ts (the MCP endpoint receives what it needs of the server from the app)',
      'db/open.ts:1 imports src/contract/errors.ts (db/ knows nothing above it)',
      'src/contract/limits.ts:1 imports src/core.ts (src/contract is read by every layer and reads none)',
      'src/lib/x.ts:1 imports ../outside.ts (outside the repository)',
    ]);
  });

  it('finds a runner or a dialect reached from above db/, and lets db/ and the tests use them', () => {
    const planted = [
      { path: 'src/ops/intents.ts', text: "import type { Write } from '../../db/runner.ts';\n" },
      { path: 'src/server/serve.ts', text: "const { POSTGRES } = await import('../../db/dialect.ts');\n" },
      { path: 'commands/requests.ts', text: "import { runnerOf } from '../db/runner.ts';\n" },
      { path: 'db/areas/intents.ts', text: "import type { SqlRunner } from '../runner.ts';\n" },
    ];
    const why = 'nothing above db/ reaches a SQL runner or names a dialect: storage is the areas of db/repo.ts';
    expect(violations(planted)).toEqual([
      `src/ops/intents.ts:1 imports db/runner.ts (${why})`,
      `src/server/serve.ts:1 imports db/dialect.ts (${why})`,
      `commands/requests.ts:1 imports db/runner.ts (${why})`,
    ]);
  });
});
