import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { hmacHex } from '../src/lib/crypto.ts';
import { printJson, writeOut } from './_output.ts';

export default defineCommand({
  meta: {
    name: 'sign',
    description: 'Lowercase hex HMAC-SHA256 of the exact bytes of a body (file or stdin), keyed with the secret in an env variable',
    examples: ['SIG=$(hookrelay sign --secret-env HOOKRELAY_SECRET --file body.json --raw)'],
  },
  args: {
    'secret-env': { type: 'string', required: true, description: 'NAME of the env variable holding the endpoint secret' },
    file: { type: 'string', description: 'Body file, signed byte for byte (default: stdin)' },
    raw: { type: 'boolean', description: 'Print only the hex signature and a newline (for SIG=$(…))' },
  },
  async run({ args }) {
    const name = args['secret-env'];
    const secret = process.env[name];
    if (!secret) throw new AppError('invalid_input', `${name} is not set; export the endpoint secret in it (the secret never goes on the command line).`);
    let bytes: Uint8Array;
    if (args.file) {
      try {
        bytes = await Bun.file(args.file).bytes();
      } catch {
        throw new AppError('invalid_input', `Cannot read ${args.file}.`);
      }
    } else {
      if (process.stdin.isTTY) throw new AppError('invalid_input', 'Pipe the body on stdin or pass --file body.json.');
      bytes = await Bun.stdin.bytes();
    }
    const signature = hmacHex(secret, bytes);
    if (args.raw) {
      await writeOut(`${signature}\n`);
      return;
    }
    printJson({
      algorithm: 'HMAC-SHA256',
      encoding: 'hex',
      signature,
      bytes: bytes.length,
      secretEnv: name,
      usage: 'Send it in the endpoint header (X-Hookrelay-Signature by default) with exactly these bytes as the body.',
    });
  },
});
