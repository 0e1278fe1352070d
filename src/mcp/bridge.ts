/**
 * `hookrelay mcp`: a stdio MCP server for desktop clients that forwards every JSON-RPC frame, unchanged, to
 * the remote endpoint (POST /agent/v1/mcp) with the grant token, and every answer back. Either era passes: the 2.x
 * SDK's HTTP client transport sends a 2025-era frame on the session its initialize opened, and a 2026-07-28 frame
 * (its `_meta` names the version) on its own, with the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers it
 * derives from the frame; a refusal of such a frame (400 with a JSON-RPC error) reaches the client as that error. stdout carries MCP
 * frames only; anything to say goes to the log (stderr). When the remote no longer knows the session (404: a
 * server whose box key changed, or one that kept sessions in memory and restarted) the bridge replays the client's
 * initialize and sends the frame again; when stdin ends, answers still in flight are delivered before the bridge
 * asks the remote to end the session.
 */
import { SdkHttpError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  isInitializeRequest,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { exitCodeFor } from '../client/errors.ts';
import { EXIT } from '../contract/errors.ts';
import type { Log } from '../lib/log.ts';

export interface BridgeOptions {
  /** The remote MCP endpoint. */
  url: URL;
  /** Authorization and expected-context headers sent with every request. */
  headers: Record<string, string>;
  log: Log;
}

/**
 * Runs until stdin ends and every answer in flight is written, then asks the remote to end the session. Resolves to
 * the exit code: 0, or when the client's initialize failed and none succeeded since (the remote unreachable, the
 * grant refused), the code that failure maps to (7 unreachable, 3 auth…): the bridge never started.
 */
export async function runStdioBridge(opts: BridgeOptions): Promise<number> {
  const local = new StdioServerTransport();
  const initializing = new Set<RequestId>();
  const inflight = new Set<Promise<void>>();
  const writes = new Set<Promise<void>>();
  /** The client's own initialize: replayed, under a bridge id, to open a new session after the remote lost one. */
  let initialize: JSONRPCRequest | null = null;
  let reopening: Promise<void> | null = null;
  let reopened = 0;
  let ending = false;
  /** Set while the client's latest initialize failed: the exit code the bridge ends with. */
  let startFailed = 0;

  const toLocal = (m: JSONRPCMessage) => {
    const write = local.send(m).finally(() => writes.delete(write));
    writes.add(write);
  };
  const connectRemote = (hidden: Set<RequestId>) => {
    const t = new StreamableHTTPClientTransport(opts.url, { requestInit: { headers: opts.headers } });
    t.onmessage = (message) => {
      if (isJSONRPCResultResponse(message)) {
        const replayed = hidden.delete(message.id);
        if (replayed || initializing.delete(message.id)) {
          t.setProtocolVersion(String(message.result.protocolVersion));
          startFailed = 0;
        }
        if (replayed) return;
      }
      toLocal(message);
    };
    t.onerror = (err) => {
      if (!ending) opts.log.warn(`remote ${opts.url.origin}: ${reason(err)}`);
    };
    return t;
  };
  let remote = connectRemote(new Set());

  /** A new remote session for the same client: its initialize again, then the initialized notification. */
  const reopen = async () => {
    const replayId = `hookrelay-bridge-reinitialize-${++reopened}`;
    const hidden = new Set<RequestId>([replayId]);
    const fresh = connectRemote(hidden);
    await fresh.start();
    await fresh.send({ ...initialize!, id: replayId });
    if (hidden.has(replayId)) throw new Error('the remote did not answer the new initialize');
    await fresh.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const old = remote;
    remote = fresh;
    await old.close().catch(() => {});
    opts.log.info('hookrelay mcp: the remote session had ended; opened a new one');
  };

  /** Sends a frame; a session the remote no longer knows is reopened once and the frame sent again. */
  const forward = async (message: JSONRPCMessage) => {
    const sentOn = remote;
    try {
      await sentOn.send(message);
    } catch (err) {
      if (!(err instanceof SdkHttpError && err.status === 404 && initialize && !isInitializeRequest(message))) throw err;
      if (remote === sentOn) reopening ??= reopen().finally(() => (reopening = null));
      await reopening;
      await remote.send(message);
    }
  };

  local.onmessage = (message) => {
    if (isJSONRPCRequest(message) && isInitializeRequest(message)) {
      initializing.add(message.id);
      initialize = message;
    }
    const sent = forward(message)
      .catch((err: unknown) => {
        // The client is waiting for an answer: give it one rather than silence.
        if (!isJSONRPCRequest(message)) return;
        const failure = describeFailure(err, opts.url);
        if (isInitializeRequest(message)) startFailed = failure.exitCode;
        toLocal({
          jsonrpc: '2.0',
          id: message.id,
          error: { code: -32000, message: failure.message, ...(failure.status ? { data: { status: failure.status } } : {}) },
        });
      })
      .finally(() => inflight.delete(sent));
    inflight.add(sent);
  };
  local.onerror = (err) => opts.log.warn(`stdin: ${reason(err)}`);

  await remote.start();
  await local.start();
  opts.log.info(`hookrelay mcp: forwarding stdio to ${opts.url.href}`);
  await new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    local.onclose = resolve;
  });
  while (inflight.size) await Promise.allSettled(inflight);
  await Promise.allSettled(writes);
  ending = true;
  await remote.terminateSession().catch(() => {});
  await remote.close();
  return startFailed;
}

/** How long a bridge that cannot start waits for the client's initialize before it exits. */
const START_FAILURE_GRACE_MS = 2_000;

/**
 * A bridge that cannot start (no token, an unknown profile, a malformed profiles file): the caller prints the
 * reason on stderr; this answers the client's first request (its initialize), when one arrives within
 * `graceMs`, with a JSON-RPC error frame carrying the reason, so a desktop client shows why instead of
 * "Connection closed". Nothing else reaches stdout. A terminal on stdin (a person) or a closed stdin is not
 * waited for. Resolves to whether a frame was written.
 */
export async function answerStartFailure(message: string, data: Record<string, unknown>, graceMs = START_FAILURE_GRACE_MS): Promise<boolean> {
  if (process.stdin.isTTY) return false;
  const local = new StdioServerTransport();
  let answered = false;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, graceMs);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    local.onmessage = (frame) => {
      if (answered || !isJSONRPCRequest(frame)) return;
      answered = true;
      // Bun.write resolves once the bytes are handed to the OS: the caller exits right after.
      const error = { jsonrpc: '2.0', id: frame.id, error: { code: -32000, message, data } };
      Bun.write(Bun.stdout, `${JSON.stringify(error)}\n`).then(done, done);
    };
    local.onerror = () => {}; // a line that is not JSON-RPC: nothing to answer
    local.onclose = done;
    process.stdin.once('end', done);
    void local.start();
  });
  await local.close();
  return answered;
}

/** A failed forward as the client hears it: the remote's answer (its HTTP status), or that it could not be reached. */
function describeFailure(err: unknown, url: URL): { message: string; status: number | null; exitCode: number } {
  if (err instanceof SdkHttpError) {
    const status = err.status !== undefined && err.status > 0 ? err.status : null;
    return { message: reason(err), status, exitCode: status ? exitCodeFor(status) : EXIT.error };
  }
  // No answer at all (refused, unresolvable, reset): name where the bridge was going, never the token.
  return { message: `Cannot reach ${url.origin}: ${reason(err)}`, status: null, exitCode: EXIT.unreachable };
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
