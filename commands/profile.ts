import { defineCommand } from 'citty';
import { expectArgs } from './_args.ts';
import { AppError } from '../src/contract/errors.ts';
import {
  checkProfile,
  EXPECTED_FIELDS,
  ENV_PROFILE,
  DEFAULT_PROFILE,
  profilesPath,
  readProfilesFile,
  writeProfilesFile,
  type Profile,
} from '../src/client/config.ts';
import { createLog, emit } from './_cli.ts';

const env = () => process.env;

function view(name: string, p: Profile) {
  return { name, ...p, tokenEnvSet: Boolean(process.env[p.tokenEnv]) };
}

function checked(name: string, raw: unknown) {
  try {
    return view(name, checkProfile(name, raw, env()));
  } catch (err) {
    // Never echo an invalid profile's values: one may be the token it must not hold.
    return { name, invalid: err instanceof Error ? err.message : 'invalid' };
  }
}

const add = defineCommand({
  meta: {
    name: 'add',
    description: 'Save a profile: base URL, the NAME of the token variable, optional expected context (never a token)',
    examples: ['hookrelay profile add prod --base-url https://relay.example.com --token-env PROD_TOKEN'],
  },
  args: {
    name: { type: 'positional', required: true, description: 'Profile name' },
    'base-url': { type: 'string', required: true, description: 'Server base URL' },
    'token-env': { type: 'string', required: true, description: 'NAME of the env variable holding the grant token' },
    ...expectArgs,
    force: { type: 'boolean', description: 'Replace an existing profile of that name' },
    quiet: { type: 'boolean', description: 'No log lines on stderr' },
  },
  run({ args }) {
    const input: Record<string, string> = { baseUrl: args['base-url'], tokenEnv: args['token-env'] };
    for (const f of EXPECTED_FIELDS) {
      const v = args[f.flag];
      if (typeof v === 'string' && v !== '') input[f.profileKey] = v;
    }
    const profile = checkProfile(args.name, input, env());
    const profiles = readProfilesFile(env());
    if (args.name in profiles && !args.force) throw new AppError('invalid_input', `Profile ${args.name} exists; pass --force to replace it.`);
    const file = writeProfilesFile(env(), { ...profiles, [args.name]: profile });
    const out = view(args.name, profile);
    if (!out.tokenEnvSet) createLog(args).warn(`${profile.tokenEnv} is not set in this shell; export the grant token in it before using the profile.`);
    emit({ saved: args.name, file, profile: out });
  },
});

const list = defineCommand({
  meta: { name: 'list', description: 'List profiles and which one is active', examples: ['hookrelay profile list'] },
  args: {},
  run() {
    const profiles = readProfilesFile(env());
    const chosen = process.env[ENV_PROFILE];
    const active = chosen ? { name: chosen, source: 'env' } : DEFAULT_PROFILE in profiles ? { name: DEFAULT_PROFILE, source: 'default' } : null;
    emit({ file: profilesPath(env()), active, profiles: Object.entries(profiles).map(([name, p]) => checked(name, p)) });
  },
});

const show = defineCommand({
  meta: {
    name: 'show',
    description: 'Show one profile (the token variable name and whether it is set, never the token)',
    examples: ['hookrelay profile show prod'],
  },
  args: { name: { type: 'positional', required: true, description: 'Profile name' } },
  run({ args }) {
    const profiles = readProfilesFile(env());
    if (!(args.name in profiles)) throw new AppError('not_found', `No profile ${args.name} in ${profilesPath(env())}.`);
    emit({ file: profilesPath(env()), profile: checked(args.name, profiles[args.name]) });
  },
});

const remove = defineCommand({
  meta: { name: 'remove', description: 'Delete a profile', examples: ['hookrelay profile remove prod'] },
  args: { name: { type: 'positional', required: true, description: 'Profile name' } },
  run({ args }) {
    const profiles = readProfilesFile(env());
    if (!(args.name in profiles)) throw new AppError('not_found', `No profile ${args.name} in ${profilesPath(env())}.`);
    const { [args.name]: _gone, ...rest } = profiles;
    emit({ removed: args.name, file: writeProfilesFile(env(), rest) });
  },
});

export default defineCommand({
  meta: { name: 'profile', description: 'Named connection profiles in $XDG_CONFIG_HOME/hookrelay/profiles.json (no tokens, only variable names)' },
  subCommands: { add, list, show, remove },
});
