/**
 * Durations as people write them (`90s`, `15m`, `2h`, `30d`): one parser and one printer for the CLI's flags, the
 * settings file and the contract's fields (an endpoint's `expectedEvery`). Free of zod: serve's start loads it.
 */
const UNITS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The form a duration takes: a whole number, then s, m, h or d. */
const DURATION = /^(\d+)([smhd])$/;

/** Parses a duration like `90s`, `15m`, `8h`, `30d` into milliseconds; null when malformed or zero. */
export function parseDuration(text: string): number | null {
  const m = DURATION.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  return n > 0 ? n * UNITS[m[2] as keyof typeof UNITS] : null;
}

/** ms as the shortest exact duration: 7_200_000 -> `2h`, 5_400_000 -> `90m`. */
export function durationText(ms: number): string {
  for (const [unit, size] of Object.entries(UNITS).reverse()) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${Math.ceil(ms / 1000)}s`;
}
