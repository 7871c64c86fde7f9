import { describe, expect, it } from 'vitest';
import { isoFromPostgres } from './columns.js';

describe('timestamptz reads back as the ISO string the SQLite store holds', () => {
  it('from PostgreSQL text in any session zone, JSON text, or a Date', () => {
    const iso = '2026-11-28T13:26:47.123Z';
    expect(isoFromPostgres('2026-11-28 13:26:47.123+00')).toBe(iso);
    expect(isoFromPostgres('2026-11-28 18:56:47.123+05:30')).toBe(iso);
    expect(isoFromPostgres('2026-11-28 14:26:47.123+01')).toBe(iso);
    expect(isoFromPostgres('2026-11-28 08:26:47.123-05')).toBe(iso);
    expect(isoFromPostgres('2026-11-28T13:26:47.123+00:00')).toBe(iso);
    expect(isoFromPostgres('2026-11-28 13:26:47+00')).toBe('2026-11-28T13:26:47.000Z');
    expect(isoFromPostgres(new Date(iso))).toBe(iso);
  });

  it('refuses what is not a time', () => {
    expect(() => isoFromPostgres('yesterday')).toThrow(/not a PostgreSQL timestamp: yesterday/);
  });
});
