/** A strict CLI: unknown flags, extra arguments and unknown commands are usage errors; help, completion, colour. */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { commandNodes, SHELLS } from '../../commands/_completion.ts';
import { renderHelp } from '../../commands/_help.ts';
import { colorFor } from '../../commands/_output.ts';
import { closest, subsOf } from '../../commands/_tree.ts';
import { main } from '../../commands/index.ts';
import { cli, cliText, closedPort, scratchHome } from './harness.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const ESC = '\u001B[';
let home: ReturnType<typeof scratchHome>;
const offline = () => ({ HOOKRELAY_BASE_URL: `http://127.0.0.1:${closedPort()}`, HOOKRELAY_TOKEN: 'hrg_unused' });

beforeAll(() => {
  home = scratchHome();
});
afterAll(() => home.cleanup());

describe('usage errors', () => {
  it('names an unknown flag, with the nearest declared one (exit 2, one JSON document)', async () => {
    const r = await cli(['events', '--limt', '5'], { home: home.dir, env: offline() });
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('usage');
    expect(r.json.error.message).toContain('--limt');
    expect(r.json.error.details).toEqual({ unknownFlags: ['--limt'], didYouMean: { '--limt': '--limit' } });
  }, 60_000);

  it('refuses a flag the command does not declare and an extra positional argument', async () => {
    const verbose = await cli(['status', '--verbose'], { home: home.dir, env: offline() });
    expect(verbose.code).toBe(2);
    expect(verbose.json.error.details.unknownFlags).toEqual(['--verbose']);
    const extra = await cli(['whoami', 'extra'], { home: home.dir, env: offline() });
    expect(extra.code).toBe(2);
    expect(extra.json.error.details.unexpectedArguments).toEqual(['extra']);
    const sub = await cli(['grant', 'list', '--tier', 'x'], { home: home.dir });
    expect(sub.code).toBe(2);
    expect(sub.json.error.message).toContain('`hookrelay grant list`');
  }, 60_000);

  it('suggests the nearest command for an unknown one, at any depth', async () => {
    const top = await cli(['evnts'], { home: home.dir });
    expect(top.code).toBe(2);
    expect(top.json.error.message).toContain('did you mean `events`?');
    const nested = await cli(['grant', 'isue'], { home: home.dir });
    expect(nested.code).toBe(2);
    expect(nested.json.error.details).toEqual({ command: 'isue', didYouMean: 'issue' });
  }, 60_000);

  it('still accepts what is declared: --flag=value, a boolean, a value after --', async () => {
    const r = await cli(['status', '--timeout=1', '--quiet'], { home: home.dir, env: offline() });
    expect(r.code).toBe(7);
  }, 60_000);

  it('closest() suggests within a few edits and not beyond', () => {
    expect(closest('evnts', ['events', 'event', 'status'])).toBe('events');
    expect(closest('stauts', ['events', 'status'])).toBe('status');
    expect(closest('zzzzzz', ['events', 'status'])).toBeUndefined();
  });
});

describe('colour', () => {
  it('never writes an escape sequence when piped, whatever NO_COLOR and FORCE_COLOR say, inside JSON or logs', async () => {
    for (const env of [{ NO_COLOR: undefined }, { NO_COLOR: undefined, FORCE_COLOR: '0' }, { NO_COLOR: undefined, FORCE_COLOR: '1' }]) {
      const unknown = await cliText(['evnts'], { home: home.dir, env });
      expect(unknown.stdout).not.toContain(ESC);
      const help = await cliText(['events', '--help'], { home: home.dir, env: { ...env, FORCE_COLOR: undefined } });
      expect(help.stdout).not.toContain(ESC);
    }
    const doctor = await cliText(['doctor'], { home: home.dir, env: { ...offline(), NO_COLOR: undefined, FORCE_COLOR: '0' } });
    expect(doctor.stderr.length).toBeGreaterThan(0);
    expect(doctor.stderr + doctor.stdout).not.toContain(ESC);
  }, 60_000);

  it('colorFor: a terminal only, NO_COLOR off, FORCE_COLOR (not 0) on, TERM=dumb off', () => {
    expect(colorFor({ isTTY: false }, {})).toBe(false);
    expect(colorFor({ isTTY: true }, {})).toBe(true);
    expect(colorFor({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(colorFor({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
    expect(colorFor({ isTTY: false }, { FORCE_COLOR: '1' })).toBe(true);
    expect(colorFor({ isTTY: true }, { FORCE_COLOR: '0' })).toBe(false);
    expect(colorFor({ isTTY: false }, { NO_COLOR: '1', FORCE_COLOR: '1' })).toBe(false);
  });
});

describe('help', () => {
  it('`help <command>` prints what `<command> --help` prints, with options and an example', async () => {
    const a = await cliText(['help', 'events'], { home: home.dir });
    const b = await cliText(['events', '--help'], { home: home.dir });
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(b.stdout);
    expect(a.stdout).toContain('Usage\n  hookrelay events [options]');
    expect(a.stdout).toContain('--follow');
    expect(a.stdout).toContain('Example');
    const nested = await cliText(['help', 'grant', 'issue'], { home: home.dir });
    expect(nested.stdout).toContain('hookrelay grant issue --shop <value> --tier <value> --ttl <value> [options]');
    const unknown = await cli(['help', 'evnts'], { home: home.dir });
    expect(unknown.code).toBe(2);
  }, 60_000);

  it('every runnable command has an example, every command a description, in one layout', async () => {
    for (const node of await commandNodes(main)) {
      let cmd = main;
      for (const w of node.path) cmd = (await subsOf(cmd))[w]!;
      const text = await renderHelp(cmd, ['hookrelay', ...node.path], false);
      expect(text).toStartWith(`${['hookrelay', ...node.path].join(' ')}`);
      expect(text).toContain('\nUsage\n');
      if (cmd.run) expect({ path: node.path, example: text.includes('\nExample') }).toEqual({ path: node.path, example: true });
      else expect(text).toContain('\nCommands\n');
    }
  }, 60_000);
});

describe('completion', () => {
  it('names every registered command and subcommand, for bash, zsh and fish', async () => {
    const nodes = await commandNodes(main);
    const names = nodes.filter((n) => n.path.length > 0).map((n) => n.path[n.path.length - 1]!);
    expect(names).toEqual(expect.arrayContaining(['events', 'tail', 'completion', 'help', 'issue', 'submit']));
    for (const shell of SHELLS) {
      const r = await cliText(['completion', shell], { home: home.dir });
      expect(r.code).toBe(0);
      for (const name of names) expect({ shell, name, found: new RegExp(`\\b${name}\\b`).test(r.stdout) }).toEqual({ shell, name, found: true });
      expect(r.stdout).toMatch(/--limit|-l limit/);
    }
    const bad = await cli(['completion', 'ksh'], { home: home.dir });
    expect(bad.code).toBe(2);
  }, 60_000);

  it('the bash script completes subcommands and flags', async () => {
    const script = (await cliText(['completion', 'bash'], { home: home.dir })).stdout;
    const probe = `${script}\nCOMP_WORDS=(hookrelay grant ''); COMP_CWORD=2; _hookrelay_complete; echo "\${COMPREPLY[*]}"\nCOMP_WORDS=(hookrelay events --li); COMP_CWORD=2; _hookrelay_complete; echo "\${COMPREPLY[*]}"`;
    const out = Bun.spawnSync(['bash', '-c', probe]).stdout.toString().trim().split('\n');
    expect(out).toEqual(['issue list revoke approve --help', '--limit']);
  }, 60_000);
});
