/**
 * A plan cap holds under concurrent executes: on a `free` store (25 diagnostics shares, 25 replay executions per
 * 30 days), 30 previews then 30 executes at once give exactly 25 × 200 and 5 × 402, the meter ends at 25 and 25
 * changes are made, for diagnostics shares, single replays and bulk replays. On the test backend (SQLite, or
 * PostgreSQL with HOOKRELAY_TEST_BACKEND=postgres) with one instance, and on two app instances sharing one
 * PostgreSQL database (when HOOKRELAY_TEST_DATABASE_URL is set).
 */
import { describe, expect, it } from 'bun:test';
import { iso } from '../../src/lib/clock.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';
import {
  addGrant,
  addStore,
  call,
  count,
  createEndpoint,
  createTestEnv,
  executeIntent,
  orderEvent,
  pgInstances,
  row,
  sendHook,
  type TestEnv,
} from '../helpers.ts';

const CAP = 25;
const TRIES = 30;

interface Deployment {
  envs: TestEnv[];
  close(): Promise<void>;
}

/** One instance of the test backend. */
async function single(): Promise<Deployment> {
  const env = await createTestEnv();
  return { envs: [env], close: async () => {} };
}

/** Two app instances on one PostgreSQL schema, with one key and one clock. */
function twoOnPostgres(): Promise<Deployment> {
  return pgInstances(2, { max: 8 });
}

/** What one scenario previews: the path and input of its i-th intent, given the events it may replay. */
interface Scenario {
  meter: 'diagnostics_shares' | 'replay_executions';
  /** Replayable (delivered) events it needs, each received a second after the last. */
  events: number;
  intent(i: number, events: { id: string; receivedAt: number }[]): { path: string; input: unknown };
}

const SCENARIOS: Record<string, Scenario> = {
  'diagnostics shares': {
    meter: 'diagnostics_shares',
    events: 0,
    intent: (i) => ({ path: '/agent/v1/diagnostics-share-intents', input: { note: `share ${i}` } }),
  },
  'single replays': {
    meter: 'replay_executions',
    events: TRIES,
    intent: (i, events) => ({ path: `/agent/v1/events/${events[i]!.id}/replay-intents`, input: { reason: `replay ${i}` } }),
  },
  'bulk replays': {
    meter: 'replay_executions',
    events: TRIES,
    // Each bulk replay its own event (a one-second window), so every execute has something to queue.
    intent: (i, events) => ({
      path: '/agent/v1/replay-intents',
      input: { reason: `bulk ${i}`, filter: { outcome: 'delivered', since: iso(events[i]!.receivedAt), until: iso(events[i]!.receivedAt + 1) } },
    }),
  },
};

/** 30 previews, then 30 executes at once spread over the instances: the statuses, and the meter and intents after. */
async function race(d: Deployment, s: Scenario) {
  const [a] = d.envs as [TestEnv];
  await addStore(a, { plan: 'free' });
  const token = await addGrant(a, 'admin_assistant');
  const events: { id: string; receivedAt: number }[] = [];
  if (s.events) {
    const { endpoint, secret } = await createEndpoint(a, token);
    for (let i = 0; i < s.events; i++) {
      const receivedAt = a.clock.now();
      const sent = await sendHook(a, endpoint, secret, orderEvent(`cap-${i}`));
      expect(sent.status).toBe(202);
      events.push({ id: sent.json.eventId, receivedAt });
      a.clock.advance(1000);
    }
    await new HandoffWorker(a.core).drain();
    expect(await count(a, 'events', "outcome = 'delivered'")).toBe(s.events);
  }
  const intents = [];
  for (let i = 0; i < TRIES; i++) {
    // Previews are rate limited (recovery_preview: 20 a minute per grant): a minute passes every 15.
    if (i && i % 15 === 0) a.clock.advance(61_000);
    const { path, input } = s.intent(i, events);
    const p = await call(d.envs[i % d.envs.length]!, 'POST', path, { token, body: { mode: 'preview', input } });
    expect(p.status).toBe(201);
    intents.push({ path, intent: p.json.data.intent });
  }
  const answers = await Promise.all(intents.map(({ path, intent }, i) => executeIntent(d.envs[i % d.envs.length]!, token, path, intent, `cap-exec-${i}`)));
  const statuses = answers.map((r) => r.status);
  // One store on this deployment: its meter and its intents.
  const used = (await row<{ used: number }>(a, 'SELECT used AS "used" FROM usage_counters WHERE meter = ?', s.meter))?.used;
  const executed = await count(a, 'intents', "state = 'executed'");
  return { statuses, answers, used: Number(used), executed };
}

function expectCapHeld(r: Awaited<ReturnType<typeof race>>, s: Scenario) {
  expect(r.statuses.filter((x) => x === 200).length).toBe(CAP);
  expect(r.statuses.filter((x) => x === 402).length).toBe(TRIES - CAP);
  for (const a of r.answers.filter((x) => x.status === 402)) {
    expect(a.json.refusal).toMatchObject({ category: 'usage', code: `${s.meter}_exhausted` });
    expect(a.json.error.details).toMatchObject({ meter: s.meter, used: CAP, limit: CAP });
  }
  expect(r.used).toBe(CAP);
  expect(r.executed).toBe(CAP);
}

describe('plan caps under concurrent executes, one instance of the test backend', () => {
  for (const [name, s] of Object.entries(SCENARIOS)) {
    it(`${name}: 30 executes at once at 25 left give exactly 25 × 200 and 5 × 402`, async () => {
      const d = await single();
      try {
        expectCapHeld(await race(d, s), s);
      } finally {
        await d.close();
      }
    });
  }
});

describe.if(!!TEST_DATABASE_URL)('plan caps under concurrent executes, two instances on one PostgreSQL', () => {
  for (const [name, s] of Object.entries(SCENARIOS)) {
    it(`${name}: 30 executes at once over both at 25 left give exactly 25 × 200 and 5 × 402`, async () => {
      const d = await twoOnPostgres();
      try {
        expectCapHeld(await race(d, s), s);
      } finally {
        await d.close();
      }
    });
  }
});
