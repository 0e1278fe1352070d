/** The MCP transport's frames, as OpenAPI documents them. */
import { z } from 'zod';

export const McpFrameSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number()]).optional(),
    method: z.string(),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .loose()
  .meta({ id: 'McpJsonRpcRequest', description: 'A JSON-RPC 2.0 frame; `initialize` starts a session.' });

export const McpResponseSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number(), z.null()]),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.number().int(), message: z.string() }).optional(),
  })
  .meta({ id: 'McpJsonRpcResponse' });

export const McpUnavailableSchema = z.object({ code: z.literal('mcp_code_mode_unavailable'), message: z.string() }).meta({ id: 'McpCodeModeUnavailable' });
