/**
 * `hookrelay mcp`: a stdio MCP server for desktop clients that forwards every JSON-RPC frame, unchanged, to
 * the remote endpoint (POST /agent/v1/mcp) with the grant token, and every answer back. stdout carries MCP
 * frames only; anything to say goes to the log (stderr).
 */
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { isInitializeRequest, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Log } from '../lib/log.ts';

export interface BridgeOptions {
  /** The remote MCP endpoint. */
  url: URL;
  /** Authorization and expected-context headers sent with every request. */
  headers: Record<string, string>;
  log: Log;
}

/** Runs until stdin ends, then ends the remote session. */
export async function runStdioBridge(opts: BridgeOptions): Promise<void> {
  const remote = new StreamableHTTPClientTransport(opts.url, { requestInit: { headers: opts.headers } });
  const local = new StdioServerTransport();
  const initializing = new Set<RequestId>();
  const toLocal = (m: JSONRPCMessage) => void local.send(m);

  local.onmessage = (message) => {
    if (isJSONRPCRequest(message) && isInitializeRequest(message)) initializing.add(message.id);
    remote.send(message).catch((err: unknown) => {
      // The client is waiting for an answer: give it one rather than silence.
      if (!isJSONRPCRequest(message)) return;
      const data = err instanceof StreamableHTTPError && err.code !== undefined ? { data: { status: err.code } } : {};
      toLocal({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: reason(err), ...data } });
    });
  };
  remote.onmessage = (message) => {
    if (isJSONRPCResultResponse(message) && initializing.delete(message.id)) remote.setProtocolVersion(String(message.result.protocolVersion));
    toLocal(message);
  };
  remote.onerror = (err) => opts.log.warn(`remote ${opts.url.origin}: ${reason(err)}`);
  local.onerror = (err) => opts.log.warn(`stdin: ${reason(err)}`);

  await remote.start();
  await local.start();
  opts.log.info(`hookrelay mcp: forwarding stdio to ${opts.url.href}`);
  await new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    local.onclose = resolve;
  });
  await remote.terminateSession().catch(() => {});
  await remote.close();
}

/**
 * What went wrong, short: `code: message` from the remote's error answer when it sent one (its answers carry no
 * secrets, and the token is never part of one), else the error's message.
 */
function reason(err: unknown): string {
  if (!(err instanceof Error)) return 'unknown error';
  try {
    const doc = JSON.parse(/endpoint: (\{.*\})$/s.exec(err.message)?.[1] ?? '');
    const e = doc.error && typeof doc.error === 'object' ? doc.error : doc;
    if (typeof e.message === 'string') return typeof e.code === 'string' ? `${e.code}: ${e.message}` : e.message;
  } catch {}
  return err.message;
}
