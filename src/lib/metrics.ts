/** A small metrics registry: counters, gauges and fixed-bucket histograms, rendered as Prometheus text (format 0.0.4). */

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** The Content-Type of the text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A monotonic count. Callers resolve it once (family.labels(…)) and keep it: inc() is a field increment. */
export class Counter {
  value = 0;
  inc(n = 1): void {
    this.value += n;
  }
}

/** A value that goes up and down, set by whoever owns it (often at scrape time). */
export class Gauge {
  value = 0;
  set(v: number): void {
    this.value = v;
  }
}

/** Counts of observations per fixed upper bound (not cumulative until rendered), their sum and count. */
export class Histogram {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length).fill(0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count++;
    const i = this.bounds.findIndex((b) => v <= b);
    if (i >= 0) this.counts[i]!++;
  }
}

type Kind = 'counter' | 'gauge' | 'histogram';

/** One metric name: its HELP, TYPE and children, one per combination of label values. */
export class Family<T extends Counter | Gauge | Histogram> {
  private readonly children = new Map<string, { values: string[]; child: T }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly kind: Kind,
    readonly labelNames: readonly string[],
    private readonly make: () => T,
  ) {
    if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name ${name}`);
    for (const l of labelNames) if (!LABEL_NAME.test(l) || l.startsWith('__') || l === 'le') throw new Error(`invalid label name ${l}`);
  }

  /** The child for these label values, made on first use (values in labelNames order). */
  labels(...values: string[]): T {
    if (values.length !== this.labelNames.length) throw new Error(`${this.name} takes ${this.labelNames.length} label values`);
    const key = values.join('\u0000');
    let entry = this.children.get(key);
    if (!entry) this.children.set(key, (entry = { values, child: this.make() }));
    return entry.child;
  }

  /** Appends the family's lines: HELP, TYPE, then every child (histograms as cumulative buckets, sum, count). */
  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.kind}`);
    for (const { values, child } of this.children.values()) {
      if (child instanceof Histogram) {
        let cumulative = 0;
        child.bounds.forEach((b, i) => {
          cumulative += child.counts[i]!;
          out.push(`${this.name}_bucket${labelText(this.labelNames, values, formatValue(b))} ${cumulative}`);
        });
        out.push(`${this.name}_bucket${labelText(this.labelNames, values, '+Inf')} ${child.count}`);
        out.push(`${this.name}_sum${labelText(this.labelNames, values)} ${formatValue(child.sum)}`);
        out.push(`${this.name}_count${labelText(this.labelNames, values)} ${child.count}`);
      } else {
        out.push(`${this.name}${labelText(this.labelNames, values)} ${formatValue(child.value)}`);
      }
    }
  }
}

/** A set of families rendered together; names are unique within a registry. */
export class Registry {
  private readonly families = new Map<string, Family<Counter | Gauge | Histogram>>();

  counter(name: string, help: string, labelNames: readonly string[] = []): Family<Counter> {
    return this.add(new Family(name, help, 'counter', labelNames, () => new Counter()));
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Family<Gauge> {
    return this.add(new Family(name, help, 'gauge', labelNames, () => new Gauge()));
  }

  /** `bounds`: ascending upper bounds; the `+Inf` bucket is implicit. */
  histogram(name: string, help: string, bounds: readonly number[], labelNames: readonly string[] = []): Family<Histogram> {
    if (!bounds.every((b, i) => Number.isFinite(b) && (i === 0 || b > bounds[i - 1]!))) throw new Error(`${name}: bounds must ascend`);
    return this.add(new Family(name, help, 'histogram', labelNames, () => new Histogram(bounds)));
  }

  /** Appends every family's lines to `out` (no trailing newline; see renderText). */
  render(out: string[]): void {
    for (const f of this.families.values()) f.render(out);
  }

  private add<T extends Counter | Gauge | Histogram>(family: Family<T>): Family<T> {
    if (this.families.has(family.name)) throw new Error(`metric ${family.name} registered twice`);
    this.families.set(family.name, family as unknown as Family<Counter | Gauge | Histogram>);
    return family;
  }
}

/** The exposition document of several registries; their family names must not overlap. */
export function renderText(registries: readonly Registry[]): string {
  const out: string[] = [];
  for (const r of registries) r.render(out);
  return out.length ? `${out.join('\n')}\n` : '';
}

/** Label values escape backslash, double quote and line feed (the format's three escapes). */
function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** HELP text escapes backslash and line feed only. */
function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** Go's float syntax as Prometheus parses it: +Inf, -Inf, NaN, else the shortest decimal. */
function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function labelText(names: readonly string[], values: readonly string[], le?: string): string {
  const pairs = names.map((n, i) => `${n}="${escapeLabelValue(values[i]!)}"`);
  if (le !== undefined) pairs.push(`le="${le}"`);
  return pairs.length ? `{${pairs.join(',')}}` : '';
}
