/**
 * The event_stats metrics: what the ingest commit and the handoff worker count, and how reliability reads
 * turn the sums back into counts, error classes and latency percentiles.
 */
import { METRIC } from '../../db/types.ts';

/** Upper bounds (ms) of the handoff latency histogram, receipt to delivered; the last one also takes anything slower. */
const LATENCY_BUCKETS_MS = [10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000, 86_400_000] as const;

/** The names a delivery adds to (one per handoff), made once rather than per attempt. */
const DELIVERED_ATTEMPT = METRIC.attempt('delivered');
const DELIVERED_HANDOFF = METRIC.handoff('delivered');
const LATENCY_METRICS = LATENCY_BUCKETS_MS.map((b) => METRIC.latency(b));

/** The metrics one handoff attempt adds to. */
export function attemptMetrics(a: { outcome: string; code: string | null; finishedAt: number }, receivedAt: number): string[] {
  const delivered = a.outcome === 'delivered';
  const out = [delivered ? DELIVERED_ATTEMPT : METRIC.attempt(a.outcome)];
  if (a.outcome !== 'retry') out.push(delivered ? DELIVERED_HANDOFF : METRIC.handoff(a.outcome));
  if (a.code) out.push(METRIC.error(a.code));
  if (delivered) out.push(latencyMetric(a.finishedAt - receivedAt));
  return out;
}

/** The histogram bucket's metric of a latency: the first bound it is within, or the last one. */
function latencyMetric(latency: number): string {
  let i = 0;
  while (i < LATENCY_BUCKETS_MS.length - 1 && !(latency <= LATENCY_BUCKETS_MS[i]!)) i++;
  return LATENCY_METRICS[i]!;
}

/** The histogram bucket bound at quantile q (an upper bound for the true value), or null with no deliveries. */
export function latencyQuantile(sums: Record<string, number>, q: number): number | null {
  const counts = LATENCY_BUCKETS_MS.map((b) => sums[METRIC.latency(b)] ?? 0);
  const total = counts.reduce((a, n) => a + n, 0);
  if (total === 0) return null;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i]!;
    if (seen >= q * total) return LATENCY_BUCKETS_MS[i]!;
  }
  return LATENCY_BUCKETS_MS.at(-1)!;
}
