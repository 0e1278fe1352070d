/**
 * The secret values serve holds, for the redactor (HeldSecrets in src/lib/redact.ts): whatever shape they have, none
 * of them may be kept or sent from what a person or agent typed. The Shopify app's client secret, the box key (as
 * hex and base64, from HOOKRELAY_SECRET_KEY or its key file), the operator webhook secret (with and without
 * `whsec_`), the database password (from HOOKRELAY_DATABASE_URL, --database-url or PGPASSWORD), and the client
 * secret or admin token in the variables the given stores name. Grant and metrics tokens are kept only as hashes.
 */
import type { StoreRow } from '../db/types.ts';
import type { Runtime } from './core.ts';
import { HeldSecrets, urlPasswords } from './lib/redact.ts';
import { platformSecretEnv } from './platform/registry.ts';

/** The operator notification's signing secret (src/ops/operator-notify.ts). */
export const OPERATOR_WEBHOOK_SECRET_ENV = 'HOOKRELAY_OPERATOR_WEBHOOK_SECRET';

/** Variables whose whole value is a secret serve may read. */
const SECRET_ENV = [...platformSecretEnv, 'HOOKRELAY_SECRET_KEY', OPERATOR_WEBHOOK_SECRET_ENV, 'PGPASSWORD'];

type StoreVariables = Pick<StoreRow, 'clientSecretEnv' | 'adminTokenEnv'>;

/** The values held by `core`'s process, and those of the variables `stores` name. */
export function heldSecrets(core: Pick<Runtime, 'config' | 'box'>, stores: readonly StoreVariables[] = []): HeldSecrets {
  const { env } = core.config;
  const values: string[] = [...core.config.heldSecrets];
  for (const name of SECRET_ENV) {
    const v = env(name)?.trim();
    if (v) values.push(v, v.replace(/^whsec_/, ''));
  }
  const key = Buffer.from(core.box.key());
  values.push(key.toString('hex'), key.toString('base64'), key.toString('base64url'));
  values.push(...urlPasswords(env('HOOKRELAY_DATABASE_URL')));
  for (const s of stores) {
    for (const name of [s.clientSecretEnv, s.adminTokenEnv]) {
      const v = name ? env(name)?.trim() : undefined;
      if (v) values.push(v);
    }
  }
  return new HeldSecrets(values);
}
