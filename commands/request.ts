import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { answerHoldsSecret } from '../src/contract/operations.ts';
import { executesChange } from '../src/contract/schemas.ts';
import { ClientError, idempotencyNote } from '../src/client/errors.ts';
import { matchOperation } from '../src/client/routes.ts';
import { connectionArgs, idempotencyKeyArg, jsonFileArg } from './_args.ts';
import { connect, emit, newIdempotencyKey, readJsonInput } from './_cli.ts';

export default defineCommand({
  meta: {
    name: 'request',
    examples: ["hookrelay request GET '/agent/v1/events?limit=5'"],
    description:
      'Advanced: call any contract operation, e.g. request POST /agent/v1/feature-requests --json f.json. Paths outside /agent/v1, the MCP transport and calls whose answer holds a secret shown once are refused; the body is validated first.',
  },
  args: {
    method: { type: 'positional', required: true, description: 'GET or POST' },
    path: { type: 'positional', required: true, description: 'Contract path with its ids and query, e.g. /agent/v1/events?limit=5' },
    ...jsonFileArg,
    ...idempotencyKeyArg,
    ...connectionArgs,
  },
  async run({ args }) {
    const { op, params, query } = matchOperation(args.method, args.path);
    const body = args.json ? await readJsonInput(args.json) : undefined;
    if (answerHoldsSecret(op, body)) {
      // The CLI masks every secret it prints: a secret shown once would be lost. create-endpoint is the one exception.
      throw new AppError(
        'invalid_input',
        `The CLI does not make this call (${op.operationId}): its answer holds a secret shown once, and the CLI prints no secret except from create-endpoint. Create endpoints with create-endpoint; make other such calls over HTTP where you can store the secret.`,
      );
    }
    const { client, log } = await connect(args, { token: op.auth === 'none' ? 'none' : 'required' });
    let idempotency: { key: string; generated: boolean } | undefined;
    if (args['idempotency-key']) idempotency = { key: args['idempotency-key'], generated: false };
    else if (op.idempotency === 'execute' && executesChange(body)) {
      idempotency = { key: newIdempotencyKey(), generated: true };
      log.info(`Idempotency-Key ${idempotency.key} (retry with --idempotency-key ${idempotency.key})`);
    }
    try {
      const res = await client.send(op, { params, query, body, idempotencyKey: idempotency?.key });
      const doc = res.body && typeof res.body === 'object' && !Array.isArray(res.body) ? res.body : { data: res.body };
      emit(idempotency ? { idempotency: { ...idempotency, replayed: res.headers.get('idempotent-replayed') === 'true' }, ...doc } : doc);
    } catch (err) {
      if (err instanceof ClientError && idempotency) {
        err.annotate({ idempotency: idempotencyNote(err, idempotency.key, idempotency.generated, `Retry with --idempotency-key ${idempotency.key}.`) });
      }
      throw err;
    }
  },
});
