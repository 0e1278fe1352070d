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
  .meta({
    id: 'McpJsonRpcRequest',
    description:
      'A JSON-RPC 2.0 frame. 2025-11-25 and 2025-06-18: `initialize` starts a session. 2026-07-28: no session; each request carries its protocol version, client info and capabilities in `params._meta`, with the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers.',
  });

export const McpResponseSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number(), z.null()]),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .meta({
    id: 'McpJsonRpcResponse',
    description: 'Every frame names the edition: a result in `result._meta.edition` (a ping answer aside: `{}`), an error in `error.data.edition`.',
  });

export const McpUnavailableSchema = z.object({ code: z.literal('mcp_code_mode_unavailable'), message: z.string() }).meta({ id: 'McpCodeModeUnavailable' });
