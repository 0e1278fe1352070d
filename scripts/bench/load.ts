/**
 * The load generator, one process (pinned to core 1 by the orchestrator): autocannon from the project's
 * devDependencies, a warm-up run, then the measured run. Latency percentiles are computed here from every
 * response time (autocannon's own histogram keeps whole milliseconds). Prints one JSON line.
 */
import autocannon from 'autocannon';

export interface LoadSpec {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** When given, requests cycle through these paths (e.g. many event ids) instead of the url's path. */
  paths?: string[];
  connections: number;
  warmupS: number;
  durationS: number;
}

export interface LoadResult {
  rps: number;
  /** Median of the whole seconds' rates: robust to a burst of work from another process on the machine. */
  rpsMedianSecond: number;
  requests: number;
  ok: number;
  non2xx: number;
  statusCounts: Record<string, number>;
  errors: number;
  timeouts: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  meanMs: number;
  durationS: number;
  /** 2xx answers during the warm-up (not in the figures). */
  warmupOk: number;
  loaderCpuPct: number;
}

function run(spec: LoadSpec, durationS: number, onResponse?: (status: number, ms: number) => void): Promise<autocannon.Result> {
  let i = 0;
  const paths = spec.paths;
  const requests = paths?.length ? [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, path: paths[i++ % paths.length] }) }] : undefined;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        method: spec.method ?? 'GET',
        headers: spec.headers,
        body: spec.body,
        connections: spec.connections,
        pipelining: 1,
        duration: durationS,
        timeout: 10,
        requests,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    if (onResponse) instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => onResponse(status, ms));
  });
}

function medianOf(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN;
}

/** Runs the warm-up, calls `measuring()`, then the measured run. */
async function generate(spec: LoadSpec, measuring: () => void = () => {}): Promise<LoadResult> {
  const warmupOk = spec.warmupS > 0 ? (await run(spec, spec.warmupS))['2xx'] : 0;
  measuring();
  let lat = new Float64Array(1 << 20);
  let n = 0;
  const statusCounts: Record<string, number> = {};
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const perSecond: number[] = [];
  const result = await run(spec, spec.durationS, (status, ms) => {
    statusCounts[status] = (statusCounts[status] ?? 0) + 1;
    const sec = Math.floor((performance.now() - t0) / 1000);
    perSecond[sec] = (perSecond[sec] ?? 0) + 1;
    if (n === lat.length) {
      const bigger = new Float64Array(lat.length * 2);
      bigger.set(lat);
      lat = bigger;
    }
    lat[n++] = ms;
  });
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sorted = lat.subarray(0, n).sort();
  const pct = (p: number) => (n ? sorted[Math.min(n - 1, Math.ceil((p / 100) * n) - 1)]! : NaN);
  const ok = result['2xx'];
  let sum = 0;
  for (let k = 0; k < n; k++) sum += sorted[k]!;
  return {
    rps: ok / result.duration,
    rpsMedianSecond: medianOf(perSecond.slice(0, Math.floor(wall)).map((x) => x ?? 0)),
    requests: result.requests.total,
    ok,
    non2xx: result.non2xx,
    statusCounts,
    errors: result.errors,
    timeouts: result.timeouts,
    p50Ms: pct(50),
    p90Ms: pct(90),
    p99Ms: pct(99),
    p999Ms: pct(99.9),
    maxMs: n ? sorted[n - 1]! : NaN,
    meanMs: n ? sum / n : NaN,
    durationS: result.duration,
    warmupOk,
    loaderCpuPct: ((cpu.user + cpu.system) / 1e6 / wall) * 100,
  };
}

/** argv[2] is the spec as JSON, or `@file` holding it. Prints `{"phase":"measure"}` when the warm-up ends. */
if (import.meta.main) {
  const arg = process.argv[2] ?? '{}';
  const spec = JSON.parse(arg.startsWith('@') ? await Bun.file(arg.slice(1)).text() : arg) as LoadSpec;
  const result = await generate(spec, () => process.stdout.write(`${JSON.stringify({ phase: 'measure' })}\n`));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
