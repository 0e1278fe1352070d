import { defineCommand } from 'citty';
import { EXPECTED_FIELDS, requireToken } from '../src/client/config.ts';
import { redactSecrets } from '../src/client/redact.ts';
import { AppError, ERROR_CODES, EXIT } from '../src/contract/errors.ts';
import { operations } from '../src/contract/operations.ts';
import { answerStartFailure, runStdioBridge, type BridgeOptions } from '../src/mcp/bridge.ts';
import { connectionArgs } from './_args.ts';
import { connect } from './_cli.ts';
import { exitDocument } from './_exit.ts';
import { drained } from './_output.ts';

export default defineCommand({
  meta: {
    name: 'mcp',
    examples: ["hookrelay mcp --profile prod  # in a desktop client's MCP server command"],
    description:
      "Stdio MCP server for desktop clients: forwards to the remote MCP endpoint (POST /agent/v1/mcp) with the configured base URL and grant token. stdout carries MCP frames only; logs and start-up errors go to stderr (a start-up error also answers the client's initialize).",
  },
  args: { ...connectionArgs },
  async run({ args }) {
    let bridge: BridgeOptions;
    try {
      const { config, log } = await connect(args, { token: 'required' });
      const headers: Record<string, string> = { authorization: `Bearer ${requireToken(config)}` };
      for (const f of EXPECTED_FIELDS) {
        const v = config.expected[f.key]?.value;
        if (v !== undefined) headers[f.header] = v;
      }
      bridge = { url: new URL(`${config.baseUrl.value}${operations.connectMcpAgentOperations.path}`), headers, log };
    } catch (err) {
      return endWith(await failure(err, { answerClient: true }));
    }
    let code: number;
    try {
      code = await runStdioBridge(bridge);
    } catch (err) {
      return endWith(await failure(err, { answerClient: false }));
    }
    if (code !== EXIT.ok) await endWith(code);
  },
});

/**
 * stdout is the protocol channel: the entry's error document (printed on stdout) would be a frame the client
 * cannot parse, and it would show only "Connection closed". The reason goes on stderr as one line (even with
 * --quiet: it is this command's only output), and to the client's initialize when it is already listening.
 */
async function failure(err: unknown, opts: { answerClient: boolean }): Promise<number> {
  const { code, message, exitCode } = failureOf(err);
  const line = `hookrelay mcp ${opts.answerClient ? 'cannot start' : 'stopped'}: ${message}`;
  await Bun.write(Bun.stderr, `${line.replace(/[\r\n]+/g, ' ')} (${code}, exit ${exitCode})\n`);
  if (opts.answerClient) await answerStartFailure(line, { code, exitCode });
  return exitCode;
}

/** The code, message (secret shapes masked, as the entry masks its error documents) and exit code of a failure. */
function failureOf(err: unknown): { code: string; message: string; exitCode: number } {
  const ended = exitDocument(err);
  const e = ended ? (ended.document as { error?: { code?: unknown; message?: unknown } }).error : undefined;
  const [code, message, exitCode] = ended
    ? [String(e?.code ?? 'error'), String(e?.message ?? 'error'), ended.exitCode]
    : err instanceof AppError
      ? [err.code, err.message, ERROR_CODES[err.code].exitCode]
      : ['internal_error', err instanceof Error ? err.message.split('\n')[0]! : 'error', EXIT.error];
  return { code, message: (redactSecrets({ message }) as { message: string }).message, exitCode };
}

/**
 * A non-zero exit without the entry's error document on stdout: the only command that ends the process itself,
 * once stderr lines and frames are written.
 */
async function endWith(exitCode: number): Promise<never> {
  await drained();
  process.exit(exitCode);
}
