/** The MCP catalogue: the contract table as `search` shows it, and tool hints derived from effect classes. */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { extensionMark, OPERATIONS, type Effect, type Operation } from '../contract/operations.ts';
import { EffectSchema } from '../contract/schemas.ts';
import { SCOPES, type Scope } from '../contract/scopes.ts';

type OperationEffect = Exclude<Effect, 'mcp_agent_operations_access'>;

/** What each effect class promises, as MCP tool hints. handoff_only performs no change by itself. */
const EFFECT_HINTS: Record<OperationEffect, Required<Pick<ToolAnnotations, 'readOnlyHint' | 'destructiveHint' | 'idempotentHint'>>> = {
  read_only: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
  handoff_only: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
  create_resource: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
  preview_or_execute: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
};

/** The operations code mode reaches: all but the MCP transport itself. */
const CODE_MODE_OPERATIONS = OPERATIONS.filter((o) => o.transport === undefined);

/** Whether a grant holding `grantScopes` may call the operation (the pipeline decides; this only predicts). */
const canCall = (op: { scopes: readonly string[] }, grantScopes: readonly string[]) => op.scopes.every((s) => grantScopes.includes(s));

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return rest;
};

/** One catalogue entry, computed once per operation. */
function describeOperation(op: Operation) {
  return {
    operationId: op.operationId,
    method: op.method,
    path: op.path,
    summary: op.summary,
    description: op.description,
    scopes: [...op.scopes],
    effect: op.effect as OperationEffect,
    confirmation: op.confirmation,
    /** `execute`: execute steps need an idempotency key; `optional`: one is honoured. */
    idempotency: op.idempotency,
    hints: EFFECT_HINTS[op.effect as OperationEffect],
    /** Beyond the spec's table, and where that was decided (absent on the spec's operations). */
    ...extensionMark(op),
    input: {
      ...(op.params ? { params: jsonSchema(op.params, 'input') } : {}),
      ...(op.query ? { query: jsonSchema(op.query, 'input') } : {}),
      ...(op.body ? { body: jsonSchema(op.body, 'input') } : {}),
    },
    /** The `data` of the response envelope (the whole body for the manifest). */
    output: jsonSchema(op.response, 'output'),
  };
}

let entries: ReturnType<typeof describeOperation>[] | null = null;

export const SearchInputShape = {
  query: z
    .string()
    .max(200)
    .optional()
    .describe('Words that must all appear in the operationId, summary, description or path, e.g. "replay" or "endpoint secret"'),
  effect: EffectSchema.exclude(['mcp_agent_operations_access']).optional().describe('Only operations of this effect class'),
  scope: z.enum(SCOPES).optional().describe('Only operations that require this scope, e.g. "replay:execute"'),
  callableOnly: z.boolean().optional().describe('Only operations this grant may call'),
  schemas: z.boolean().optional().describe('Include input and output JSON Schemas (default true)'),
};
export type SearchInput = { [K in keyof typeof SearchInputShape]: z.infer<(typeof SearchInputShape)[K]> };

/** The catalogue filtered by text, effect and scope; `callable` says whether the grant's scopes allow the call. */
export function searchCatalogue(input: SearchInput, grantScopes: readonly Scope[]) {
  entries ??= CODE_MODE_OPERATIONS.map(describeOperation);
  const words = (input.query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const found = entries
    .filter((e) => words.every((w) => `${e.operationId} ${e.method} ${e.path} ${e.summary} ${e.description}`.toLowerCase().includes(w)))
    .filter((e) => !input.effect || e.effect === input.effect)
    .filter((e) => !input.scope || e.scopes.includes(input.scope))
    .map((e) => ({ ...e, callable: canCall(e, grantScopes) }))
    .filter((e) => !input.callableOnly || e.callable)
    .map((e) => (input.schemas === false ? { ...e, input: undefined, output: undefined } : e));
  return { count: found.length, total: entries.length, operations: found };
}

/** `execute` can do whatever the grant's callable operations do: its hints combine theirs. */
export function executeHints(grantScopes: readonly string[]): ToolAnnotations {
  const hints = CODE_MODE_OPERATIONS.filter((o) => canCall(o, grantScopes)).map((o) => EFFECT_HINTS[o.effect as OperationEffect]);
  return {
    readOnlyHint: hints.every((h) => h.readOnlyHint),
    destructiveHint: hints.some((h) => h.destructiveHint),
    idempotentHint: hints.every((h) => h.idempotentHint),
    openWorldHint: false,
  };
}
