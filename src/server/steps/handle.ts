/**
 * The handler step: the operation's handler on validated input and the success envelope; and which usage meter a
 * call counts, which the audit step writes with the call's row (one transaction: steps/audit.ts).
 */
import type { Meter } from '../../contract/plans.ts';
import type { Operation } from '../../contract/operations.ts';
import type { OpContext } from '../../ops/context.ts';
import { envelopeBody, type Answer } from '../http.ts';
import type { Input } from './validate.ts';

export type AnyHandler = (ctx: OpContext, input: Input) => Promise<unknown>;

/** Runs `handler`: 201 for a preview, else the operation's success status. */
export async function handle(op: Operation, handler: AnyHandler, ctx: OpContext, input: Input, executing: boolean): Promise<Answer> {
  const data = await handler(ctx, input);
  const status = op.effect === 'preview_or_execute' && !executing ? 201 : op.successStatus;
  return { status, body: envelopeBody(ctx, data) };
}

/** Which usage meter a call that ran its handler counts against, from the table's classes. */
export function meterOf(op: Operation, executing: boolean): Meter | null {
  if (op.rateLimitClass === 'simple_read') return 'simple_reads';
  if (op.rateLimitClass === 'rich_read') return 'rich_reads';
  // An execute counts executed_actions with its change, in one transaction (src/ops/intents.ts): once, or not at all.
  if (op.effect === 'preview_or_execute') return executing ? null : 'action_previews';
  return null;
}
