/** Runs the admin CLI as a subprocess in a chosen cwd with a scratch HOME: nothing from the developer's shell leaks in. */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENTRY } from './harness.ts';

/** Each test spawns several CLI processes; on a loaded machine one spawn can take seconds. Never a speed assertion. */
export const SPAWN_TIMEOUT_MS = 120_000;

export interface AdminBox {
  /** Scratch root: HOME is `root/home`; `dir(name)` makes a working directory under it. */
  root: string;
  home: string;
  env: Record<string, string>;
  dir(name: string): string;
}

/** A fresh HOME (no XDG_DATA_HOME, no HOOKRELAY_DATA_DIR): the per-user default data dir is `home/.local/share/hookrelay`. */
export function adminBox(prefix = 'hookrelay-admin-'): AdminBox {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const home = join(root, 'home');
  mkdirSync(home);
  return {
    root,
    home,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, NO_COLOR: '1' },
    dir(name) {
      const d = join(root, name);
      mkdirSync(d, { recursive: true });
      return d;
    },
  };
}

export interface AdminResult {
  code: number;
  json: any;
  stderr: string;
}

/** `bun commands/index.ts …args` in `cwd` with the box's environment plus `env`. */
export function admin(box: AdminBox, cwd: string, args: string[], env: Record<string, string> = {}): AdminResult {
  const r = Bun.spawnSync(['bun', ENTRY, ...args], { cwd, env: { ...box.env, ...env }, stdout: 'pipe', stderr: 'pipe' });
  const stdout = r.stdout.toString();
  let json: unknown = null;
  try {
    json = JSON.parse(stdout);
  } catch {
    throw new Error(`stdout of ${args.join(' ')} is not one JSON document (exit ${r.exitCode}):\n${stdout}\n${r.stderr.toString()}`);
  }
  return { code: r.exitCode, json, stderr: r.stderr.toString() };
}
