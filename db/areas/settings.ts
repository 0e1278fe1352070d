/**
 * Box-wide settings (key → JSON text), written once for both dialects over the thin runner (db/runner.ts): single
 * keys, the keys under a prefix (metrics tokens), and the sealed value serve proves its box key against.
 */
import type { SettingStore } from '../repo.ts';
import { first, type SqlRunner } from '../runner.ts';

/** The setting holding the box key check (JSON: a sealed constant; src/ops/box-key.ts). */
export const BOX_KEY_CHECK = 'box_key_check';

/**
 * The queries finding a sealed value of the box (src/ops/box-key.ts), first found wins: each gives its value as
 * `s` (the key check's as JSON text).
 */
export const SEALED_SAMPLES = [
  { table: 'endpoints', sql: 'SELECT secret_sealed AS s FROM endpoints LIMIT 1', json: false },
  { table: 'settings', sql: `SELECT value AS s FROM settings WHERE key = '${BOX_KEY_CHECK}'`, json: true },
] as const;

export function settingStore(sql: SqlRunner): SettingStore {
  return {
    getSetting: async (key) => (await first<{ value: string }>(sql, 'SELECT value FROM settings WHERE key = ?', [key]))?.value ?? null,
    putSetting: async (key, value, at) => {
      await sql.run(
        'INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
        [key, value, at],
      );
    },
    addSetting: async (key, value, at) => {
      await sql.run('INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING', [key, value, at]);
    },
    listSettings: (prefix) => sql.all('SELECT key AS "key", value AS "value" FROM settings WHERE key LIKE ?', [`${prefix}%`]),
    sealedSample: async () => {
      for (const q of SEALED_SAMPLES) {
        const s = (await sql.all<{ s: string }>(q.sql, []))[0]?.s;
        if (s != null) return q.json ? (JSON.parse(s) as string) : s;
      }
      return null;
    },
  };
}
