/**
 * Asking the person before code mode executes a previewed change, on 2026-07-28 (multi-round-trip requests). When
 * the client declared elicitation, a run of `execute` that reaches an execute step (an operation of effect
 * preview_or_execute called with mode "execute") stops there, before the step is sent: the tool answers
 * `input_required` with a form asking the person, and a sealed requestState holding every api call the run made and
 * its answer. The client retries the tool call with the answer and the state; the code runs again from the top and
 * each call it makes is answered from the record (matched by its exact request, never sent again) until it reaches the
 * step asked about, which is sent only if the person accepted (else the code gets a `confirmation_declined` ApiError).
 * A later execute step asks again. Code that makes other calls on the retry than it made before is stopped at the
 * first difference (`sandbox_replay_diverged`), before that call is sent: nothing is sent twice.
 *
 * The person's answer is asked in addition to the preview's confirmation token, never instead: the step sent still
 * carries the token and the pipeline checks it. A client that cannot be asked (no elicitation declared, or any
 * 2025-era request: each POST is answered by a server of its own with JSON, so there is no stream for an
 * elicitation request nor a server to take its answer) keeps the token as the only rule.
 */
import { createHash, createHmac } from 'node:crypto';
import { inputRequired, inputResponse, type InputRequiredResult } from '@modelcontextprotocol/server';
import { operations, type Operation, type OperationId } from '../contract/operations.ts';
import { SecretBox } from '../lib/crypto.ts';
import { matchOperation } from '../client/routes.ts';
import type { Host, HostAnswer } from './code-mode.ts';
import type { SandboxError } from './sandbox.ts';

/** How long the person has to answer: past it the retry is refused and the agent runs its code again. */
const STATE_TTL_MS = 15 * 60_000;
/** The record travels in the request body both ways: past this the run is not paused to ask (the token rule holds). */
const MAX_RECORD_BYTES = 256 * 1024;
const QUESTION = 'execute';

interface Recorded {
  request: string;
  answer: HostAnswer;
}

/** What the sealed requestState holds. */
interface RoundState {
  grantId: string;
  /** sha256 of the code: a retry runs the same code. */
  code: string;
  expiresAt: number;
  record: Recorded[];
  /** The execute step the person is asked about. */
  asked: string;
}

/** What the 2.x SDK hands a tool handler of a 2026-07-28 request, as far as asking goes. */
interface ModernExtra {
  mcpReq?: {
    envelope?: { 'io.modelcontextprotocol/clientCapabilities'?: { elicitation?: unknown } };
    inputResponses?: Record<string, unknown>;
    requestState?: () => unknown;
  };
}

/** The end of a round that did not finish: ask the person, or refuse the run. */
export type Stopped = { ask: InputRequiredResult } | { error: SandboxError };

export interface Consent {
  /** The host for this round: answers recorded calls from the record, and stops at an execute step to ask. */
  host(real: Host): Host;
  /** After the run: why it did not finish (it stopped to ask, or diverged from the record), or null. */
  stopped(): Stopped | null;
}

/**
 * The consent of one `execute` call: null when the person cannot be asked (a 2025-era request, or a first round from a
 * client that did not declare elicitation); a refusal when the retry's requestState is not one this server sealed for
 * this grant and code, or it expired.
 */
export function consentFor(extra: unknown, grantId: string, code: string, box: SecretBox, now: number): Consent | { error: SandboxError } | null {
  const req = (extra as ModernExtra).mcpReq;
  const raw = req?.requestState?.();
  // A retry is a round of its own whatever it declares: running it afresh would make its recorded calls again.
  if (!req || (raw === undefined && !req.envelope?.['io.modelcontextprotocol/clientCapabilities']?.elicitation)) return null;
  const sealer = stateBox(box);
  const codeHash = createHash('sha256').update(code).digest('base64url');
  let state: RoundState | null = null;
  if (raw !== undefined) {
    state = typeof raw === 'string' ? openState(sealer, raw) : null;
    if (!state || state.grantId !== grantId || state.code !== codeHash || state.expiresAt < now) {
      return {
        error: {
          code: 'invalid_input',
          message: 'The requestState of this retry is not one this server gave for this grant and code, or it expired; call execute again without it.',
        },
      };
    }
  }
  const answer = inputResponse(req.inputResponses, QUESTION);
  const accepted = answer.kind === 'elicit' && answer.action === 'accept' && answer.content?.[QUESTION] === true;
  return round({ sealer, grantId, codeHash, now, state, accepted });
}

/** One round of a run: the record replayed, then calls sent and recorded, until an execute step not yet answered. */
function round(r: { sealer: SecretBox; grantId: string; codeHash: string; now: number; state: RoundState | null; accepted: boolean }): Consent {
  const record: Recorded[] = r.state ? [...r.state.record] : [];
  const replaying = record.length;
  let next = 0;
  let decided = r.state?.asked ?? null;
  let stop: { asked: string; op: Operation; intentId: unknown } | { diverged: string } | null = null;

  return {
    host: (real) => async (raw) => {
      if (stop) return refused('input_required', 'This run is paused for the person to confirm a step; its other calls are not sent.');
      const request = JSON.stringify(raw);
      if (next < replaying) {
        if (record[next]!.request !== request) return diverge(request);
        return record[next++]!.answer;
      }
      if (decided !== null) {
        if (request !== decided) return diverge(request);
        decided = null;
        const answer = r.accepted ? await real(raw) : refused('confirmation_declined', 'The person declined this step; it was not executed.');
        record.push({ request, answer });
        next++;
        return answer;
      }
      const step = executeStep(raw);
      if (step && JSON.stringify(record).length <= MAX_RECORD_BYTES) {
        stop = { asked: request, ...step };
        return refused('input_required', 'This step waits for the person to confirm it.');
      }
      const answer = await real(raw);
      record.push({ request, answer });
      next++;
      return answer;
    },
    stopped() {
      if (!stop) return null;
      if ('diverged' in stop) {
        return {
          error: {
            code: 'sandbox_replay_diverged',
            message:
              'On the retry the code made another api call than on the first round, so it was stopped before sending it: nothing was sent twice. Keep the calls of a run the same on each round (no Math.random or Date in their input).',
            call: stop.diverged,
          },
        };
      }
      const state: RoundState = { grantId: r.grantId, code: r.codeHash, expiresAt: r.now + STATE_TTL_MS, record, asked: stop.asked };
      const intent = typeof stop.intentId === 'string' ? ` (intent ${stop.intentId})` : '';
      return {
        ask: inputRequired({
          inputRequests: {
            [QUESTION]: inputRequired.elicit({
              message: `The agent asks to execute a previewed change: ${stop.op.summary}${intent}, with its confirmation token. Execute it now?`,
              requestedSchema: {
                type: 'object',
                properties: { [QUESTION]: { type: 'boolean', title: 'Execute', description: `${stop.op.operationId}: ${stop.op.description}` } },
                required: [QUESTION],
              },
            }),
          },
          requestState: r.sealer.seal(JSON.stringify(state)),
        }),
      };
    },
  };

  function diverge(request: string): HostAnswer {
    stop = { diverged: request };
    return refused('sandbox_replay_diverged', 'This call differs from the one made at this point on the first round; it was not sent.');
  }
}

/** The execute step a sandbox request makes (its operation and intent), or null for any other call. */
function executeStep(raw: unknown): { op: Operation; intentId: unknown } | null {
  const r = raw as { kind?: string; operationId?: string; method?: string; path?: string; body?: unknown; input?: { body?: unknown } };
  let op: Operation | undefined;
  try {
    op =
      r.kind === 'call'
        ? Object.hasOwn(operations, r.operationId ?? '')
          ? (operations[r.operationId as OperationId] as Operation)
          : undefined
        : matchOperation(String(r.method), String(r.path)).op;
  } catch {
    return null; // no such operation: the real host refuses it
  }
  const body = (r.kind === 'call' ? r.input?.body : r.body) as { mode?: unknown; intentId?: unknown } | undefined;
  return op?.effect === 'preview_or_execute' && body?.mode === 'execute' ? { op, intentId: body.intentId } : null;
}

const refused = (code: string, message: string): HostAnswer => ({ ok: false, error: { code, message, status: null } });

/** The box sealing request states: AES-GCM under a key of its own, derived from the box key (as session ids' is). */
function stateBox(box: SecretBox): SecretBox {
  return new SecretBox(createHmac('sha256', box.key()).update('hookrelay mcp request state v1').digest(), box.source);
}

function openState(sealer: SecretBox, sealed: string): RoundState | null {
  try {
    return JSON.parse(sealer.open(sealed)) as RoundState;
  } catch {
    return null;
  }
}
