/**
 * Where the CLI's base URL, grant token and expected context come from: flag > environment > profile > default.
 * Profiles live in $XDG_CONFIG_HOME/hookrelay/profiles.json and never hold a token, only the NAME of the
 * environment variable that does.
 */
import { EXPECTED_CONTEXT } from '../contract/context.ts';
import { AppError } from '../contract/errors.ts';
import { mask } from './redact.ts';

// node:fs, node:os and node:path cost a cold start 45 ms between them; a client command reads its profiles with
// Bun.file (loadProfilesFile), and only the commands that manage profiles load node:fs, when they run.
const nodeFs = () => require('node:fs') as typeof import('node:fs');
const joinPath = (...parts: string[]) => parts.join('/').replace(/\/{2,}/g, '/');

export type Env = Record<string, string | undefined>;

const ENV_BASE_URL = 'HOOKRELAY_BASE_URL';
const ENV_TOKEN = 'HOOKRELAY_TOKEN';
export const ENV_PROFILE = 'HOOKRELAY_PROFILE';
const DEFAULT_BASE_URL = 'http://127.0.0.1:8787';
export const DEFAULT_PROFILE = 'default';
const DEFAULT_TIMEOUT_MS = 30_000;

/** The four expected-context values: profile field, flag, environment variable and the header they become. */
/** Where the CLI reads each expected-context value; the header itself comes from the contract. */
const CLIENT_NAMES = {
  platformKey: { profileKey: 'expectedPlatformKey', flag: 'expect-platform-key', env: 'HOOKRELAY_EXPECTED_PLATFORM_KEY' },
  platformAccountId: { profileKey: 'expectedPlatformAccountId', flag: 'expect-platform-account-id', env: 'HOOKRELAY_EXPECTED_PLATFORM_ACCOUNT_ID' },
  shopDomain: { profileKey: 'expectedShopDomain', flag: 'expect-shop-domain', env: 'HOOKRELAY_EXPECTED_SHOP_DOMAIN' },
  installationId: { profileKey: 'expectedInstallationId', flag: 'expect-installation-id', env: 'HOOKRELAY_EXPECTED_INSTALLATION_ID' },
} as const;

export const EXPECTED_FIELDS = EXPECTED_CONTEXT.map((c) => ({ key: c.key, header: c.header, ...CLIENT_NAMES[c.key] }));
export type ExpectedKey = (typeof EXPECTED_FIELDS)[number]['key'];
export type ExpectedContext = Partial<Record<ExpectedKey, string>>;

/** A stored profile: where to connect and the NAME of the variable holding the token, never the token. */
export interface Profile {
  baseUrl: string;
  tokenEnv: string;
  expectedPlatformKey?: string;
  expectedPlatformAccountId?: string;
  expectedShopDomain?: string;
  expectedInstallationId?: string;
}

/** Checked by hand rather than with zod, so a command that needs no contract (`status`) never loads zod. */
function profileShape(name: string, input: unknown): Profile {
  const fail = (field: string, message: string) => new AppError('invalid_input', `Profile ${name}: ${field}: ${message}.`);
  if (!input || typeof input !== 'object' || Array.isArray(input)) throw fail('profile', 'must be an object');
  const allowed = new Set(['baseUrl', 'tokenEnv', ...EXPECTED_FIELDS.map((f) => f.profileKey)]);
  for (const [key, value] of Object.entries(input)) {
    if (!allowed.has(key)) throw fail(key, 'unknown field');
    if (typeof value !== 'string' || value.length === 0 || value.length > 255) throw fail(key, 'must be a string of 1 to 255 characters');
  }
  for (const key of ['baseUrl', 'tokenEnv']) if (!(key in input)) throw fail(key, 'required');
  return input as Profile;
}

const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * True when a value looks like a credential rather than a variable name or an id: a grant token or endpoint
 * secret prefix, a `Bearer` value, the current HOOKRELAY_TOKEN, or a long mixed-case alphanumeric string.
 */
export function looksLikeToken(value: string, env: Env = {}): boolean {
  const v = value.trim();
  if (/^(hr[garo]_|whsec_|bearer\s)/i.test(v)) return true;
  if (env[ENV_TOKEN] && v === env[ENV_TOKEN]) return true;
  return v.length >= 24 && /[a-z]/.test(v) && /[A-Z]/.test(v) && /[0-9]/.test(v);
}

/** `http(s)://host[:port][/prefix]` without credentials, query or fragment, trailing slashes dropped. */
export function normalizeBaseUrl(value: string, where: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new AppError('invalid_input', `${where} is not a URL (expected e.g. ${DEFAULT_BASE_URL}).`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AppError('invalid_input', `${where} must be an http:// or https:// URL.`);
  if (url.username || url.password) throw new AppError('invalid_input', `${where} must not embed credentials; the grant token goes in a variable.`);
  if (url.search || url.hash) throw new AppError('invalid_input', `${where} must not carry a query or fragment.`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** Checks a variable NAME given for the token; refuses anything that looks like the token itself. */
function checkTokenEnvName(name: string, where: string, env: Env = {}): string {
  if (looksLikeToken(name, env)) {
    throw new AppError(
      'invalid_input',
      `${where} looks like a token. Give the NAME of the environment variable that holds the token (e.g. HOOKRELAY_TOKEN_PROD), never the token.`,
    );
  }
  if (!ENV_NAME.test(name)) throw new AppError('invalid_input', `${where} must be an environment variable name (letters, digits, underscores).`);
  return name;
}

/** Validates one profile; refuses a token anywhere in it. */
export function checkProfile(name: string, input: unknown, env: Env = {}): Profile {
  if (!PROFILE_NAME.test(name)) throw new AppError('invalid_input', `Profile name ${JSON.stringify(name)} must be letters, digits, '.', '_' or '-'.`);
  if (input && typeof input === 'object') {
    const tokenEnv = (input as { tokenEnv?: unknown }).tokenEnv;
    if (typeof tokenEnv === 'string') checkTokenEnvName(tokenEnv, `Profile ${name} tokenEnv`, env);
    const keys = Object.keys(input);
    if (keys.some((k) => /token$|secret|password|authorization/i.test(k) && k !== 'tokenEnv')) {
      throw new AppError(
        'invalid_input',
        `Profile ${name} holds a credential field; profiles name the variable holding the token (tokenEnv), never the token. Remove it from the profiles file.`,
      );
    }
    for (const v of Object.values(input)) {
      if (typeof v === 'string' && /^(hrg_|whsec_|bearer\s)/i.test(v.trim())) {
        throw new AppError('invalid_input', `Profile ${name} holds a value that looks like a token or secret; profiles never hold one.`);
      }
    }
  }
  const p = profileShape(name, input);
  const out: Profile = {
    baseUrl: normalizeBaseUrl(p.baseUrl, `Profile ${name} baseUrl`),
    tokenEnv: checkTokenEnvName(p.tokenEnv, `Profile ${name} tokenEnv`, env),
  };
  for (const f of EXPECTED_FIELDS) {
    const v = p[f.profileKey];
    if (v !== undefined) {
      if (looksLikeToken(v, env)) throw new AppError('invalid_input', `Profile ${name} ${f.profileKey} looks like a token; profiles never hold one.`);
      out[f.profileKey] = v;
    }
  }
  return out;
}

/** $XDG_CONFIG_HOME/hookrelay/profiles.json, or ~/.config/hookrelay/profiles.json. */
export function profilesPath(env: Env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg?.startsWith('/') ? xdg : joinPath(env.HOME || (require('node:os') as typeof import('node:os')).homedir(), '.config');
  return joinPath(base, 'hookrelay', 'profiles.json');
}

/** The profiles file as stored, unvalidated (profile commands use it to repair a bad file). */
export function readProfilesFile(env: Env): Record<string, unknown> {
  const file = profilesPath(env);
  const fs = nodeFs();
  return fs.existsSync(file) ? parseProfilesFile(file, () => fs.readFileSync(file, 'utf8')) : {};
}

/** readProfilesFile without node:fs, for the commands that only read the profiles (every client command). */
export async function loadProfilesFile(env: Env): Promise<Record<string, unknown>> {
  const file = profilesPath(env);
  const handle = Bun.file(file);
  if (!(await handle.exists())) return {};
  let text: string;
  try {
    text = await handle.text();
  } catch {
    text = '';
  }
  return parseProfilesFile(file, () => text);
}

function parseProfilesFile(file: string, read: () => string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(read());
  } catch {
    throw new AppError('invalid_input', `${file} is not valid JSON.`);
  }
  const profiles = (doc as { profiles?: unknown } | null)?.profiles;
  if (!profiles || typeof profiles !== 'object' || Array.isArray(profiles)) {
    throw new AppError('invalid_input', `${file} must look like {"profiles": {"name": {"baseUrl": "…", "tokenEnv": "…"}}}.`);
  }
  return profiles as Record<string, unknown>;
}

/** Writes the profiles file owner-only (0600 in a 0700 directory), atomically. */
export function writeProfilesFile(env: Env, profiles: Record<string, unknown>): string {
  const file = profilesPath(env);
  const fs = nodeFs();
  fs.mkdirSync(file.slice(0, file.lastIndexOf('/')), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify({ profiles }, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
  return file;
}

export type Source = 'flag' | 'env' | 'profile' | 'default' | 'none';

export interface Resolved<T> {
  value: T;
  source: Source;
  /** Which flag, variable or profile field supplied it. */
  from: string;
}

export interface ConfigFlags {
  baseUrl?: string;
  profile?: string;
  tokenEnv?: string;
  /** Seconds. */
  timeout?: string;
  expected?: ExpectedContext;
}

export interface ResolvedConfig {
  profile: { name: string; source: 'flag' | 'env' | 'default' } | null;
  profilesFile: string;
  baseUrl: Resolved<string>;
  /** `variable`: the environment variable the token was read from (or should have been). */
  token: Resolved<string | null> & { variable: string | null };
  expected: Partial<Record<ExpectedKey, Resolved<string>>>;
  timeoutMs: number;
  /** Things worth a line on stderr (an environment variable overriding the chosen profile…). */
  notes: string[];
}

const nonEmpty = (v: string | undefined): v is string => typeof v === 'string' && v.trim() !== '';

/**
 * Resolves the configuration: flag > environment > profile > default, field by field. `stored`: the profiles
 * file already read (loadProfilesFile); read here otherwise.
 */
export function resolveConfig(flags: ConfigFlags, env: Env, stored: Record<string, unknown> = readProfilesFile(env)): ResolvedConfig {
  const notes: string[] = [];
  const profilesFile = profilesPath(env);

  let profileRef: ResolvedConfig['profile'] = null;
  if (nonEmpty(flags.profile)) profileRef = { name: flags.profile, source: 'flag' };
  else if (nonEmpty(env[ENV_PROFILE])) profileRef = { name: env[ENV_PROFILE], source: 'env' };
  let profile: Profile | null = null;
  if (profileRef) {
    if (!(profileRef.name in stored)) {
      throw new AppError('invalid_input', `No profile ${profileRef.name} in ${profilesFile}; hookrelay profile list shows them.`);
    }
    profile = checkProfile(profileRef.name, stored[profileRef.name], env);
  } else if (DEFAULT_PROFILE in stored) {
    profileRef = { name: DEFAULT_PROFILE, source: 'default' };
    profile = checkProfile(DEFAULT_PROFILE, stored[DEFAULT_PROFILE], env);
  }
  const pname = profileRef?.name;

  let baseUrl: Resolved<string>;
  if (nonEmpty(flags.baseUrl)) baseUrl = { value: normalizeBaseUrl(flags.baseUrl, '--base-url'), source: 'flag', from: '--base-url' };
  else if (nonEmpty(env[ENV_BASE_URL])) baseUrl = { value: normalizeBaseUrl(env[ENV_BASE_URL], ENV_BASE_URL), source: 'env', from: ENV_BASE_URL };
  else if (profile) baseUrl = { value: profile.baseUrl, source: 'profile', from: `profile ${pname} baseUrl` };
  else baseUrl = { value: DEFAULT_BASE_URL, source: 'default', from: 'built-in default' };
  if (profile && baseUrl.source === 'env') notes.push(`${ENV_BASE_URL} overrides the baseUrl of profile ${pname}.`);

  let token: ResolvedConfig['token'];
  if (nonEmpty(flags.tokenEnv)) {
    const name = checkTokenEnvName(flags.tokenEnv, '--token-env', env);
    token = { value: nonEmpty(env[name]) ? env[name] : null, source: 'flag', from: `--token-env ${name}`, variable: name };
  } else if (nonEmpty(env[ENV_TOKEN])) {
    token = { value: env[ENV_TOKEN], source: 'env', from: ENV_TOKEN, variable: ENV_TOKEN };
  } else if (profile) {
    const name = profile.tokenEnv;
    token = { value: nonEmpty(env[name]) ? env[name] : null, source: 'profile', from: `profile ${pname} tokenEnv ${name}`, variable: name };
  } else {
    token = { value: null, source: 'none', from: 'nowhere', variable: null };
  }
  if (profile && token.source === 'env') notes.push(`${ENV_TOKEN} overrides the tokenEnv of profile ${pname}.`);

  const expected: ResolvedConfig['expected'] = {};
  for (const f of EXPECTED_FIELDS) {
    const fromFlag = flags.expected?.[f.key];
    const fromProfile = profile?.[f.profileKey];
    const fromEnv = env[f.env];
    if (nonEmpty(fromFlag)) expected[f.key] = { value: fromFlag, source: 'flag', from: `--${f.flag}` };
    else if (nonEmpty(fromEnv)) expected[f.key] = { value: fromEnv, source: 'env', from: f.env };
    else if (nonEmpty(fromProfile)) expected[f.key] = { value: fromProfile, source: 'profile', from: `profile ${pname} ${f.profileKey}` };
  }

  let timeoutMs = DEFAULT_TIMEOUT_MS;
  if (nonEmpty(flags.timeout)) {
    const s = Number(flags.timeout);
    if (!Number.isFinite(s) || s <= 0 || s > 600) throw new AppError('invalid_input', '--timeout must be a number of seconds, above 0 and at most 600.');
    timeoutMs = Math.round(s * 1000);
  }

  return { profile: profileRef, profilesFile, baseUrl, token, expected, timeoutMs, notes };
}

/** The expected context values alone, for the client. */
export function expectedContext(config: ResolvedConfig): ExpectedContext {
  return Object.fromEntries(Object.entries(config.expected).map(([k, r]) => [k, r.value]));
}

/** The token, or an `unauthorized` error (exit 3) saying where it was looked for. */
export function requireToken(config: ResolvedConfig): string {
  if (config.token.value) return config.token.value;
  const { variable, from } = config.token;
  throw new AppError(
    'unauthorized',
    variable
      ? // Not "token: NAME": printed output masks a value after "token:", and this one is a name the reader needs.
        `No grant token: the variable ${variable} is not set (read from ${from}). Export it where this runs, or name another with --token-env NAME.`
      : `No grant token: set ${ENV_TOKEN}, pass --token-env NAME, or use a profile whose tokenEnv names a set variable.`,
  );
}

/** A printable account of the configuration and where each value came from; the token only masked. */
export function describeConfig(config: ResolvedConfig) {
  return {
    profile: config.profile,
    profilesFile: config.profilesFile,
    baseUrl: config.baseUrl,
    token: {
      present: config.token.value !== null,
      masked: config.token.value ? mask(config.token.value) : null,
      source: config.token.source,
      from: config.token.from,
      variable: config.token.variable,
    },
    expectedContext: config.expected,
    timeoutSeconds: config.timeoutMs / 1000,
  };
}
