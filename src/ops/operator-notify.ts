/**
 * The operator notification: each new support, feature and expansion request POSTed to
 * HOOKRELAY_OPERATOR_WEBHOOK_URL as a Standard Webhooks message (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` keyed with the base64-decoded
 * HOOKRELAY_OPERATOR_WEBHOOK_SECRET). Sent after the request is committed, in the background, retried a few times
 * with backoff; the agent's call never waits for it nor fails with it. Pending retries live in this process only.
 */
import { createHmac } from 'node:crypto';
import type { RecordRow } from '../../db/types.ts';
import { AppError } from '../contract/errors.ts';
import type { Runtime } from '../core.ts';
import { iso } from '../lib/clock.ts';
import { heldSecrets, OPERATOR_WEBHOOK_SECRET_ENV } from '../held-secrets.ts';
import { requestDetail, type OperatorRequestDetail } from './operator-requests.ts';

const OPERATOR_WEBHOOK_URL_ENV = 'HOOKRELAY_OPERATOR_WEBHOOK_URL';

/** Delays before the 2nd, 3rd… attempt, ms: five attempts over about 13 minutes. */
const NOTIFY_RETRY_DELAYS_MS: readonly number[] = [5_000, 30_000, 120_000, 600_000];
/** One attempt's wait for an answer. */
const NOTIFY_TIMEOUT_MS = 10_000;
/** Notifications waiting for an attempt at most: past it a new one is dropped (and logged) rather than held. */
const NOTIFY_MAX_PENDING = 1000;

/** Where notifications go and the key that signs them. */
export interface OperatorWebhook {
  url: string;
  key: Uint8Array;
}

/** The Standard Webhooks message: its type, when it was made, and the request as `hookrelay requests show` prints it. */
export interface OperatorMessage {
  type: 'request.created';
  timestamp: string;
  data: OperatorRequestDetail & { show: string };
}

/**
 * The notification settings: null when HOOKRELAY_OPERATOR_WEBHOOK_URL is unset. invalid_input (naming the variable
 * and the rule, never its value) for a URL that is not http(s), a missing secret, or one that is not `whsec_` and
 * the base64 of 24 to 64 bytes (`echo "whsec_$(openssl rand -base64 32)"`).
 */
export function operatorWebhookFromEnv(env: (name: string) => string | undefined): OperatorWebhook | null {
  const url = env(OPERATOR_WEBHOOK_URL_ENV)?.trim();
  if (!url) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AppError('invalid_input', `${OPERATOR_WEBHOOK_URL_ENV} must be an http:// or https:// URL.`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    throw new AppError('invalid_input', `${OPERATOR_WEBHOOK_URL_ENV} must be an http:// or https:// URL.`);
  const secret = env(OPERATOR_WEBHOOK_SECRET_ENV)?.trim();
  const rule = `${OPERATOR_WEBHOOK_SECRET_ENV} must be whsec_ followed by the base64 of 24 to 64 random bytes, e.g. whsec_$(openssl rand -base64 32)`;
  if (!secret)
    throw new AppError('invalid_input', `${OPERATOR_WEBHOOK_URL_ENV} is set without ${OPERATOR_WEBHOOK_SECRET_ENV}: notifications are always signed. ${rule}.`);
  const b64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const key = /^[A-Za-z0-9+/]+={0,2}$/.test(b64) && b64.length % 4 === 0 ? Buffer.from(b64, 'base64') : Buffer.alloc(0);
  if (key.length < 24 || key.length > 64) throw new AppError('invalid_input', `${rule}.`);
  return { url: parsed.toString(), key: new Uint8Array(key) };
}

/** `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, the Standard Webhooks signature (timestamp in seconds). */
export function signOperatorMessage(key: Uint8Array, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

export interface NotifierOptions {
  delaysMs?: readonly number[];
  timeoutMs?: number;
}

type Settings = { webhook: OperatorWebhook | null; problem: string | null };

/** Sends and retries one core's notifications; at most NOTIFY_MAX_PENDING at once. */
export class OperatorNotifier {
  private readonly inFlight = new Set<Promise<void>>();
  private settings: Settings | null = null;
  private readonly delaysMs: readonly number[];
  private readonly timeoutMs: number;

  constructor(
    private readonly core: Runtime,
    opts: NotifierOptions = {},
  ) {
    this.delaysMs = opts.delaysMs ?? NOTIFY_RETRY_DELAYS_MS;
    this.timeoutMs = opts.timeoutMs ?? NOTIFY_TIMEOUT_MS;
  }

  /** The settings, read from the environment once; a bad setting is logged once and turns notifications off. */
  current(): Settings {
    if (this.settings) return this.settings;
    try {
      this.settings = { webhook: operatorWebhookFromEnv(this.core.config.env), problem: null };
    } catch (err) {
      const problem = err instanceof Error ? err.message : 'unreadable setting';
      this.core.log.error(`operator notifications are off: ${problem}`);
      this.settings = { webhook: null, problem };
    }
    return this.settings;
  }

  /** Queues the request's notification and returns at once: nothing here throws or waits on the network. */
  notify(row: RecordRow, shop: string | null): void {
    const { webhook } = this.current();
    if (!webhook) return;
    if (this.inFlight.size >= NOTIFY_MAX_PENDING) {
      this.core.log.warn(
        `operator notification for ${row.id} dropped: ${NOTIFY_MAX_PENDING} are already waiting (read it with hookrelay requests show ${row.id})`,
      );
      return;
    }
    // Stored redacted; redacted again with what this process holds (a secret set since, or the app's).
    const detail = requestDetail(row, shop, heldSecrets(this.core));
    const message: OperatorMessage = {
      type: 'request.created',
      timestamp: iso(this.core.clock.now()),
      data: { ...detail, show: `hookrelay requests show ${detail.id}` },
    };
    const done: Promise<void> = this.deliver(webhook, row.id, JSON.stringify(message))
      .catch(() => {})
      .finally(() => this.inFlight.delete(done));
    this.inFlight.add(done);
  }

  /** Resolves once every queued notification is delivered or given up (tests; a stop does not wait for it). */
  async idle(): Promise<void> {
    while (this.inFlight.size) await Promise.all([...this.inFlight]);
  }

  /** Attempts until a 2xx answer or the last delay; the same webhook-id on every attempt, so a receiver can dedupe. */
  private async deliver(webhook: OperatorWebhook, id: string, body: string): Promise<void> {
    // The first attempt too leaves the agent's call first: it starts on a later turn of the event loop.
    await sleep(0);
    let last = '';
    for (let attempt = 0; attempt <= this.delaysMs.length; attempt++) {
      if (attempt > 0) await sleep(this.delaysMs[attempt - 1]!);
      const timestamp = Math.floor(this.core.clock.now() / 1000);
      try {
        const res = await fetch(webhook.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'hookrelay-operator-notify',
            'webhook-id': id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signOperatorMessage(webhook.key, id, timestamp, body),
          },
          body,
          redirect: 'manual',
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        await res.body?.cancel().catch(() => {});
        if (res.status >= 200 && res.status < 300) return;
        last = `answered ${res.status}`;
      } catch (err) {
        // The error's name only: a fetch error's message can carry the URL, which may hold a token.
        last = err instanceof Error && err.name === 'TimeoutError' ? 'no answer in time' : 'unreachable';
      }
      const more = attempt < this.delaysMs.length;
      this.core.log.warn(`operator notification for ${id}: attempt ${attempt + 1} ${last}${more ? `; again in ${this.delaysMs[attempt]! / 1000} s` : ''}`);
    }
    this.core.log.error(
      `operator notification for ${id} given up after ${this.delaysMs.length + 1} attempts (${last}); read it with hookrelay requests show ${id}`,
    );
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    // Unreferenced: a pending retry never holds a process open (a stop drops it; see the README).
    const t = setTimeout(resolve, ms);
    (t as { unref?: () => void }).unref?.();
  });
}

const notifiers = new WeakMap<Runtime, OperatorNotifier>();

/** The notifier of this runtime (one per Core, made on first use). */
function operatorNotifier(core: Runtime): OperatorNotifier {
  let n = notifiers.get(core);
  if (!n) notifiers.set(core, (n = new OperatorNotifier(core)));
  return n;
}

/** Replaces the runtime's notifier (tests: short retry delays). */
export function useOperatorNotifier(core: Runtime, opts: NotifierOptions): OperatorNotifier {
  const n = new OperatorNotifier(core, opts);
  notifiers.set(core, n);
  return n;
}

/** Tells the operator of a request just committed, when a notification URL is set; returns at once. */
export function notifyOperator(core: Runtime, shop: string | null, row: RecordRow): void {
  try {
    operatorNotifier(core).notify(row, shop);
  } catch {
    // Never the agent's failure: the request is stored and `hookrelay requests` shows it.
  }
}

/**
 * Who sees what an agent sends, for previews: the operator of this server, through `hookrelay requests`, and at
 * once when a notification URL is set (said as it is on this server now).
 */
export function operatorSees(core: Runtime, what: string): string {
  const lead = `The operator of this hookrelay server sees ${what}`;
  return operatorNotifier(core).current().webhook
    ? `${lead}: it is sent to their notification URL at once, and hookrelay requests lists it.`
    : `${lead} when they read it with hookrelay requests (no notification URL is set on this server).`;
}
