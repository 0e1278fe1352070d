/** The validation step: a call's path parameters, query and body against its operation's schemas, once. */
import type { z } from 'zod';
import type { Operation } from '../../contract/operations.ts';
import { invalidInput } from '../http.ts';

/** What a handler receives: each part parsed by the operation's schema, undefined where the operation has none. */
export interface Input {
  params: unknown;
  query: unknown;
  body: unknown;
}

/** A call's raw input. `readBody` is asked only when the operation takes a body (HTTP reads the stream then). */
export interface RawInput {
  params: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  readBody?: () => Promise<unknown>;
}

/** Parses `raw` for `op`: 400 `invalid_input` naming the first offending field (never its value). */
export async function validate(op: Operation, raw: RawInput): Promise<Input> {
  return {
    params: op.params ? parse(op.params, raw.params, 'path') : undefined,
    query: op.query ? parse(op.query, raw.query ?? {}, 'query') : undefined,
    body: op.body ? parse(op.body, raw.readBody ? await raw.readBody() : raw.body, 'body') : undefined,
  };
}

function parse<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw invalidInput(where, r.error);
  return r.data;
}
