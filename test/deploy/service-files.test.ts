/**
 * The service files under deploy/ (README, "Running as a service"): the systemd units pass `systemd-analyze verify`
 * where the tool exists and say what the README says (binary, data directory, user, flags the commands declare);
 * the Containerfile builds with the repository's own build command, on the Bun the project pins, from sources it
 * copies in full.
 */
import { describe, expect, it } from 'bun:test';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../commands/index.ts';
import { argsOf, subsOf } from '../../commands/_tree.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const README = read('README.md');

const BINARY = '/usr/local/bin/hookrelay';
const DATA_DIR = '/var/lib/hookrelay';
const UNITS = ['deploy/hookrelay.service', 'deploy/hookrelay-backup.service', 'deploy/hookrelay-backup.timer'];

type Unit = Record<string, Record<string, string[]>>;

/** systemd's unit syntax as these files use it: [Section], Key=value (repeatable), # and ; comments. */
function parseUnit(text: string): Unit {
  const unit: Unit = {};
  let section: Record<string, string[]> | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const head = /^\[(.+)\]$/.exec(line);
    if (head) {
      section = unit[head[1]!] ??= {};
      continue;
    }
    const eq = line.indexOf('=');
    if (!section || eq < 1) throw new Error(`not a unit line: ${line}`);
    (section[line.slice(0, eq).trim()] ??= []).push(line.slice(eq + 1).trim());
  }
  return unit;
}

/** The flags of a hookrelay command line, checked against what that command declares (citty's tree). */
async function undeclaredFlags(commandLine: string): Promise<string[]> {
  const words = commandLine.split(/\s+/);
  expect(words[0]).toBe(BINARY);
  const command = (await subsOf(main))[words[1]!];
  expect(command, `hookrelay ${words[1]} is a command`).toBeDefined();
  const declared = new Set(Object.keys(await argsOf(command!)));
  return words
    .filter((w) => w.startsWith('--'))
    .map((w) => w.slice(2).split('=')[0]!)
    .filter((f) => !declared.has(f));
}

describe('the systemd units', () => {
  const serve = parseUnit(read('deploy/hookrelay.service'));
  const backup = parseUnit(read('deploy/hookrelay-backup.service'));

  it('hookrelay.service runs the binary the README installs as a dedicated user on /var/lib/hookrelay, hardened, with flags serve declares', async () => {
    const s = serve.Service!;
    expect(s.ExecStart).toHaveLength(1);
    const exec = s.ExecStart![0]!;
    expect(exec).toStartWith(`${BINARY} serve `);
    expect(exec).toContain(`--data-dir ${DATA_DIR}`);
    expect(await undeclaredFlags(exec)).toEqual([]);
    expect(s.User).toEqual(['hookrelay']);
    expect(s.StateDirectory).toEqual(['hookrelay']);
    expect(s.StateDirectoryMode).toEqual(['0700']);
    expect(s.KillSignal).toEqual(['SIGTERM']);
    for (const key of ['NoNewPrivileges', 'PrivateTmp', 'PrivateDevices', 'ProtectHome']) expect({ key, value: s[key] }).toEqual({ key, value: ['yes'] });
    expect(s.ProtectSystem).toEqual(['strict']);
    // Bun's JIT writes code it then executes: this option would stop serve at start.
    expect(s.MemoryDenyWriteExecute).toBeUndefined();
    expect(serve.Install!.WantedBy).toEqual(['multi-user.target']);
  });

  it('hookrelay-backup.service backs up the same directory as the same user, with flags backup declares', async () => {
    const s = backup.Service!;
    expect(s.User).toEqual(serve.Service!.User);
    const inner = /^\/bin\/sh -c 'exec (.+)'$/.exec(s.ExecStart![0]!)?.[1];
    expect(inner).toStartWith(`${BINARY} backup `);
    expect(inner).toContain(`--data-dir ${DATA_DIR}`);
    expect(inner).not.toContain('--include-key');
    expect(await undeclaredFlags(inner!.replace(/"[^"]*"/g, 'FILE'))).toEqual([]);
    expect(s.ReadWritePaths![0]!.split(' ')).toContain(DATA_DIR);
    expect(parseUnit(read('deploy/hookrelay-backup.timer')).Timer!.OnCalendar).toEqual(['daily']);
  });

  it('the README names the files, the binary, the data directory and the user', () => {
    for (const text of [...UNITS, BINARY, DATA_DIR, 'useradd --system', 'systemd-analyze verify'])
      expect({ text, inReadme: README.includes(text) }).toEqual({ text, inReadme: true });
  });

  const analyze = Bun.which('systemd-analyze');
  // Where systemd is not installed (macOS, a slim CI image) the syntax checks above still run.
  it.skipIf(!analyze)(`systemd-analyze verify accepts them, warnings included${analyze ? '' : ' (skipped: systemd-analyze is not installed)'}`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookrelay-units-'));
    try {
      // verify checks that ExecStart's program exists: a stand-in where the README installs the real one.
      const stub = join(dir, 'hookrelay');
      writeFileSync(stub, '#!/bin/sh\n');
      chmodSync(stub, 0o755);
      const files = UNITS.map((u) => {
        const path = join(dir, u.split('/').pop()!);
        writeFileSync(path, read(u).replaceAll(BINARY, stub));
        return path;
      });
      const r = Bun.spawnSync([analyze!, 'verify', '--man=no', ...files], { cwd: dir, stdout: 'pipe', stderr: 'pipe' });
      // An unknown or misspelt key is only a warning (exit 0): any output at all fails the check.
      expect({ exit: r.exitCode, output: (r.stdout.toString() + r.stderr.toString()).trim() }).toEqual({ exit: 0, output: '' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the Containerfile', () => {
  const text = read('deploy/Containerfile');
  const lines = text.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
  const pkg = JSON.parse(read('package.json')) as {
    scripts: Record<string, string>;
    packageManager: string;
    engines: { bun: string };
    devDependencies: Record<string, string>;
  };

  it("builds with package.json's build script and ships the file it writes", () => {
    expect(pkg.scripts.build).toBe('bun scripts/build.ts');
    expect(lines).toContain('RUN bun run build');
    expect(lines).toContain('RUN bun install --frozen-lockfile');
    // scripts/build.ts writes dist/hookrelay unless given another path.
    expect(read('scripts/build.ts')).toContain("process.argv[2] ?? 'dist/hookrelay'");
    expect(lines).toContain(`COPY --from=build /src/dist/hookrelay ${BINARY}`);
    expect(lines).toContain(`ENTRYPOINT ["${BINARY}"]`);
    expect(lines).toContain(`ENV HOOKRELAY_DATA_DIR=${DATA_DIR}`);
    expect(lines).toContain('STOPSIGNAL SIGTERM');
    expect(lines.some((l) => /^USER (?!root)\S+$/.test(l))).toBe(true);
  });

  it('builds on the Bun the project pins (CI, the README and package.json)', () => {
    const pinned = /^BUN_VERSION="([^"]+)"$/m.exec(read('.ci/run'))?.[1];
    expect(pinned).toBeDefined();
    expect(README).toContain(`npm install -g bun@${pinned}`);
    expect(lines[0]).toBe(`FROM oven/bun:${pinned} AS build`);
    expect(pkg.packageManager).toBe(`bun@${pinned}`);
    expect(pkg.engines.bun).toBe(`>=${pinned}`);
    expect(pkg.devDependencies['@types/bun']).toBe(pinned);
  });

  it('copies every source file the build reads', () => {
    const copied = lines.filter((l) => l.startsWith('COPY ') && !l.includes('--from')).flatMap((l) => l.split(/\s+/).slice(1, -1));
    // What Bun.build reads for the binary, bundled as scripts/build.ts bundles it (in a child, as test/cli/imports-at-start.test.ts does).
    const script = `import { BUNDLE } from './scripts/build.ts';
const r = await Bun.build({ ...BUNDLE, entrypoints: [...BUNDLE.entrypoints], plugins: [...BUNDLE.plugins], target: 'bun', metafile: true, throw: false });
console.log(JSON.stringify(Object.keys(r.metafile?.inputs ?? {})));`;
    const r = Bun.spawnSync(['bun', '-e', script], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
    expect(r.exitCode).toBe(0);
    const inputs = (JSON.parse(r.stdout.toString()) as string[]).filter(
      (p) => !p.startsWith('node_modules/') && !p.startsWith('bun:') && !p.startsWith('node:'),
    );
    expect(inputs.length).toBeGreaterThan(50);
    const top = [...new Set(inputs.map((p) => p.split('/')[0]!))].sort();
    expect(top.filter((t) => !copied.includes(t))).toEqual([]);
    expect(copied).toContain('scripts');
    expect(copied).toEqual(expect.arrayContaining(['package.json', 'bun.lock']));
  }, 60_000);
});
