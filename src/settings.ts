/**
 * The operator's settings without rebuilding: `hookrelay.toml` (in the data directory, or `--config FILE` /
 * HOOKRELAY_CONFIG), each setting overridden by its environment variable, and `serve`'s flags over both. One table
 * (SETTINGS) says, per setting, its key, its variable, how it is read and checked, and where it goes in Config; the
 * defaults stay where they are decided (the contract's limits, defaultConfig). Validated at start: a bad value or an
 * unknown key stops serve with the file, the key and the rule.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from './contract/errors.ts';
import type { RateLimitClass } from './contract/operations.ts';
import type { Config, RetentionConfig } from './core.ts';
import { parseDuration } from './contract/durations.ts';
import { nearest } from './lib/closest.ts';

export const SETTINGS_FILE = 'hookrelay.toml';

const DAY = 86_400_000;

type Kind =
  | { type: 'url' }
  | { type: 'duration'; min: number; max: number }
  | { type: 'durations'; min: number; max: number; most: number }
  | { type: 'int'; min: number; max: number };

interface Setting {
  /** The key in the file: `section.name`, or a top-level `name`. */
  key: string;
  kind: Kind;
  /** What it means, for errors and `hookrelay help`-style listings. */
  about: string;
  /** Writes the parsed value into the config. */
  apply(config: Config, value: never): void;
  /** The value in effect, for setup state and the start-up line. */
  read(config: Config): unknown;
}

/** HOOKRELAY_ and the key in capitals with `_` for `.`: `retention.events` is HOOKRELAY_RETENTION_EVENTS. */
export const envName = (key: string) => `HOOKRELAY_${key.replaceAll('.', '_').toUpperCase()}`;

const RATE_CLASSES: readonly RateLimitClass[] = ['simple_read', 'rich_read', 'recovery_preview', 'endpoint_preview'];

function retention(name: keyof RetentionConfig, key: string, about: string, min = DAY): Setting {
  return {
    key: `retention.${key}`,
    kind: { type: 'duration', min, max: 3650 * DAY },
    about,
    apply: (c, v: number) => void (c.retention = { ...c.retention, [name]: v }),
    read: (c) => c.retention[name],
  };
}

function sandbox(name: 'cpuMs' | 'maxCalls', key: string, min: number, max: number, about: string): Setting {
  return {
    key: `sandbox.${key}`,
    kind: { type: 'int', min, max },
    about,
    apply: (c, v: number) => void (c.mcp = { ...c.mcp, limits: { ...c.mcp.limits, [name]: v } }),
    read: (c) => c.mcp.limits[name],
  };
}

export const SETTINGS: readonly Setting[] = [
  {
    key: 'public_url',
    kind: { type: 'url' },
    about: 'the base of endpoint URLs and links (https://relay.example.com)',
    apply: (c, v: string) => void (c.publicUrl = v),
    read: (c) => c.publicUrl,
  },
  {
    key: 'retry_schedule',
    kind: { type: 'durations', min: 1000, max: 7 * DAY, most: 30 },
    about: 'the delays before each retry of a transient handoff failure (5s,30s,2m,1h or a list)',
    apply: (c, v: number[]) => void (c.handoff = { ...c.handoff, retrySchedule: v }),
    read: (c) => c.handoff.retrySchedule,
  },
  ...RATE_CLASSES.flatMap((cls): Setting[] =>
    (['grant', 'store'] as const).map((per) => ({
      key: `rate_limits.${cls}.${per}`,
      kind: { type: 'int', min: 1, max: 100_000 },
      about: `${cls} calls per minute per ${per}`,
      apply: (c, v: number) => void (c.rateLimits = { ...c.rateLimits, [cls]: { ...c.rateLimits[cls], [per]: v } }),
      read: (c) => c.rateLimits[cls][per],
    })),
  ),
  {
    key: 'retention.bodies',
    kind: { type: 'duration', min: DAY, max: 3650 * DAY },
    about: 'how long raw event bodies are kept for replay (a shorter value also reaches bodies already stored)',
    apply: (c, v: number) => void (c.bodyRetentionMs = v),
    read: (c) => c.bodyRetentionMs,
  },
  // At least two days: duplicate suppression looks back 24 hours.
  retention('events', 'events', 'how long events that ended (and their attempts) are kept', 2 * DAY),
  retention('audit', 'audit', 'how long audit rows are kept'),
  retention('intents', 'intents', 'how long intents are kept after they end'),
  retention('requests', 'requests', 'how long support, feature and expansion requests and expired diagnostics shares are kept'),
  retention('authFailures', 'auth_failures', 'how long records of failed authentications are kept'),
  sandbox('cpuMs', 'cpu_ms', 100, 60_000, 'MCP code mode: agent code time per run, ms'),
  {
    key: 'sandbox.memory_mb',
    kind: { type: 'int', min: 8, max: 1024 },
    about: 'MCP code mode: memory agent code may take per run, MiB',
    apply: (c, v: number) => void (c.mcp = { ...c.mcp, limits: { ...c.mcp.limits, memoryBytes: v * 1024 * 1024 } }),
    read: (c) => c.mcp.limits.memoryBytes / (1024 * 1024),
  },
  sandbox('maxCalls', 'max_calls', 1, 1000, 'MCP code mode: api calls per run'),
  {
    key: 'sandbox.max_result_kb',
    kind: { type: 'int', min: 1, max: 16_384 },
    about: 'MCP code mode: JSON result size per run, KiB',
    apply: (c, v: number) => void (c.mcp = { ...c.mcp, limits: { ...c.mcp.limits, maxResultBytes: v * 1024 } }),
    read: (c) => c.mcp.limits.maxResultBytes / 1024,
  },
];

/** Where each setting in effect came from. */
export type SettingSource = 'default' | 'file' | 'environment' | 'flag';

export interface LoadedSettings {
  /** The file read, or null when there was none. */
  file: string | null;
  /** Keys set by the file or the environment, with where from (the rest are defaults). */
  sources: Record<string, Exclude<SettingSource, 'default' | 'flag'>>;
  /** A setting's value from the file or the environment, parsed; undefined when neither sets it. */
  get(key: string): unknown;
  /** Writes them into `config`. */
  apply(config: Config): void;
}

/**
 * Reads the settings: `file` (given: must exist), else `<dataDir>/hookrelay.toml` when there is one; then each
 * setting's variable in `env`. Throws `invalid_input` naming the file or variable, the key and the rule.
 */
export function loadSettings(opts: { file?: string | null; dataDir?: string | null; env: Record<string, string | undefined> }): LoadedSettings {
  const file = opts.file ?? (opts.dataDir && existsSync(join(opts.dataDir, SETTINGS_FILE)) ? join(opts.dataDir, SETTINGS_FILE) : null);
  const values = new Map<Setting, unknown>();
  const sources: LoadedSettings['sources'] = {};
  if (file) {
    let doc: unknown;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new AppError('invalid_input', `${file}: ${code === 'ENOENT' ? 'no such file' : `not readable (${code ?? (err as Error).message})`}.`);
    }
    try {
      doc = Bun.TOML.parse(text);
    } catch (err) {
      const why = `not valid TOML at line ${tomlErrorLine(text)} (${(err as Error).message.split('\n')[0]?.replace(/^TOML Parse error: /, '')})`;
      throw new AppError('invalid_input', `${file}: ${why}.`);
    }
    for (const [key, raw] of flatten(doc)) {
      const setting = SETTINGS.find((s) => s.key === key);
      if (!setting)
        throw new AppError('invalid_input', `${file}: unknown setting ${key}${didYouMean(key)}. Settings: ${SETTINGS.map((s) => s.key).join(', ')}.`);
      values.set(setting, parse(setting, raw, file));
      sources[key] = 'file';
    }
  }
  for (const setting of SETTINGS) {
    const text = opts.env[envName(setting.key)]?.trim();
    if (!text) continue;
    values.set(setting, parse(setting, text, envName(setting.key)));
    sources[setting.key] = 'environment';
  }
  return {
    file,
    sources,
    get: (key) => [...values].find(([s]) => s.key === key)?.[1],
    apply(config) {
      for (const [setting, value] of values) setting.apply(config, value as never);
      config.settingSources = { ...config.settingSources, ...sources };
    },
  };
}

/** A setting's value as plan usage shows it: durations as `90d` / `30s`, lists joined. */
function shown(setting: Setting, value: unknown): string | number {
  const one = (ms: number) =>
    ms % DAY === 0 ? `${ms / DAY}d` : ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms / 1000}s`;
  if (setting.kind.type === 'duration') return one(value as number);
  if (setting.kind.type === 'durations') return (value as number[]).map(one).join(',');
  return value as string | number;
}

/** The settings in effect and where each came from (plan usage shows them; serve's start-up line names the sources). */
export function settingsInEffect(config: Config) {
  return {
    precedence: 'serve flags, then environment variables (HOOKRELAY_<KEY>), then hookrelay.toml, then defaults',
    values: SETTINGS.map((s) => ({ key: s.key, value: shown(s, s.read(config)), source: config.settingSources[s.key] ?? ('default' as const) })),
  };
}

/** serve's start-up line: the file, and which settings the file and the environment set (never their values: a URL may be private). */
export function describeSettings(loaded: Pick<LoadedSettings, 'file' | 'sources'>): string {
  const by = (src: string) => Object.keys(loaded.sources).filter((k) => loaded.sources[k] === src);
  const parts = [loaded.file ? `file ${loaded.file}${by('file').length ? ` (${by('file').join(', ')})` : ' (no settings)'}` : `no ${SETTINGS_FILE}`];
  if (by('environment').length) parts.push(`environment: ${by('environment').map(envName).join(', ')}`);
  return `settings: ${parts.join('; ')}; flags override the environment, which overrides the file`;
}

/**
 * Every HOOKRELAY_ variable hookrelay reads, besides the settings' own (envName): serve's, the CLI's, the app's and
 * the tests' harness. test/api/settings.test.ts checks that every HOOKRELAY_ name in the source is here.
 */
const OTHER_VARIABLES = [
  'HOOKRELAY_DATA_DIR',
  'HOOKRELAY_PORT',
  'HOOKRELAY_HOST',
  'HOOKRELAY_DATABASE_URL',
  'HOOKRELAY_SECRET_KEY',
  'HOOKRELAY_CONFIG',
  'HOOKRELAY_LOG_FORMAT',
  'HOOKRELAY_RELAY_THREAD',
  'HOOKRELAY_TRUST_PROXY',
  'HOOKRELAY_BILLING',
  'HOOKRELAY_SHOPIFY_CLIENT_ID',
  'HOOKRELAY_SHOPIFY_APP_SECRET',
  'HOOKRELAY_SHOPIFY_ADMIN_URL',
  'HOOKRELAY_OPERATOR_WEBHOOK_URL',
  'HOOKRELAY_OPERATOR_WEBHOOK_SECRET',
  'HOOKRELAY_MCP_ALLOWED_ORIGINS',
  'HOOKRELAY_MCP_ALLOWED_HOSTS',
  'HOOKRELAY_MCP_CODE_MODE',
  'HOOKRELAY_CRASH_AT',
  // The CLI and the MCP bridge (a client on the same box).
  'HOOKRELAY_TOKEN',
  'HOOKRELAY_BASE_URL',
  'HOOKRELAY_PROFILE',
  'HOOKRELAY_EXPECTED_SHOP_DOMAIN',
  'HOOKRELAY_EXPECTED_PLATFORM_KEY',
  'HOOKRELAY_EXPECTED_PLATFORM_ACCOUNT_ID',
  'HOOKRELAY_EXPECTED_INSTALLATION_ID',
];
/** Families named by their user: a profile's token (HOOKRELAY_TOKEN_PROD), the test, bench and torture harnesses. */
const VARIABLE_FAMILIES = ['HOOKRELAY_TOKEN_', 'HOOKRELAY_TEST_', 'HOOKRELAY_BENCH_', 'HOOKRELAY_TORTURE_'];

/** Every HOOKRELAY_ variable name hookrelay reads (families aside). */
export const KNOWN_VARIABLES: readonly string[] = [...new Set([...SETTINGS.map((s) => envName(s.key)), ...OTHER_VARIABLES])].sort();

/**
 * The HOOKRELAY_ variables set in `env` that hookrelay reads nowhere (a misspelling is otherwise silently ignored),
 * each with the known name closest to it. `also`: names the operator chose that hookrelay reads (a store's
 * credential variables). Only names: never a value.
 */
export function strayVariables(env: Record<string, string | undefined>, also: readonly string[] = []): { name: string; closest: string }[] {
  const known = new Set([...KNOWN_VARIABLES, ...also]);
  return Object.keys(env)
    .filter((n) => n.startsWith('HOOKRELAY_') && env[n] !== undefined && !known.has(n) && !VARIABLE_FAMILIES.some((f) => n.startsWith(f)))
    .sort()
    .map((name) => ({ name, closest: nearest(name, KNOWN_VARIABLES)!.name }));
}

/** serve's warning for each stray variable: its name and the closest known one, never its value. */
export function describeStrayVariable(v: { name: string; closest: string }): string {
  return `${v.name} is set, but hookrelay reads no variable of that name: it is ignored (did you mean ${v.closest}?).`;
}

/** `[a.b] c = 1` as [['a.b.c', 1]]; arrays are values. */
function flatten(doc: unknown, prefix = ''): [string, unknown][] {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return [[prefix, doc]];
  return Object.entries(doc).flatMap(([k, v]) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? flatten(v, `${prefix}${k}.`) : [[`${prefix}${k}`, v] as [string, unknown]],
  );
}

/**
 * The line a TOML syntax error is on (Bun's parser names none): the line after the longest run of whole lines
 * that parses. An error inside a value spanning lines (an array, a multi-line string) is put on its first line.
 */
function tomlErrorLine(text: string): number {
  const lines = text.split('\n');
  let good = 0;
  for (let n = 1; n <= lines.length; n++) {
    try {
      Bun.TOML.parse(lines.slice(0, n).join('\n'));
      good = n;
    } catch {
      // not yet whole, or wrong here
    }
  }
  return Math.min(good + 1, lines.length);
}

function didYouMean(key: string): string {
  const leaf = key.split('.').at(-1)!;
  const close = SETTINGS.find((s) => s.key.split('.').at(-1) === leaf || s.key.startsWith(key) || key.startsWith(s.key));
  return close ? ` (did you mean ${close.key}?)` : '';
}

function parse(setting: Setting, raw: unknown, where: string): unknown {
  const k = setting.kind;
  const bad = (rule: string) => new AppError('invalid_input', `${where}: ${setting.key} must be ${rule}; it is ${setting.about}.`);
  const days = (ms: number) => (ms % DAY === 0 ? `${ms / DAY}d` : `${ms / 1000}s`);
  if (k.type === 'url') {
    if (typeof raw !== 'string' || !/^https?:\/\/[^/\s]+/.test(raw) || !URL.canParse(raw)) throw bad('an http(s) URL');
    return raw.replace(/\/+$/, '');
  }
  if (k.type === 'int') {
    const n = typeof raw === 'string' && /^\d+$/.test(raw.trim()) ? Number(raw) : raw;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < k.min || n > k.max) throw bad(`a whole number from ${k.min} to ${k.max}`);
    return n;
  }
  const one = (v: unknown) => (typeof v === 'string' ? parseDuration(v) : null);
  if (k.type === 'duration') {
    const ms = one(raw);
    if (ms === null || ms < k.min || ms > k.max) throw bad(`a duration like 90d, from ${days(k.min)} to ${days(k.max)}`);
    return ms;
  }
  const list = typeof raw === 'string' ? raw.split(',').map((p) => p.trim()) : Array.isArray(raw) ? raw : null;
  const delays = list?.map(one) ?? null;
  if (!delays || delays.length === 0 || delays.length > k.most || delays.some((d) => d === null || d < k.min || d > k.max)) {
    throw bad(`1 to ${k.most} delays like 5s,30s,2m,1h (each ${days(k.min)} to ${days(k.max)})`);
  }
  return delays;
}
