import { customType } from 'drizzle-orm/pg-core';

/**
 * A point in time: `timestamp(3) with time zone` in PostgreSQL (so BI tools and SQL see a real time), the same
 * ISO 8601 UTC string (`2026-11-28T13:26:47.123Z`) the SQLite store holds in the application. Milliseconds, as
 * JavaScript's Date. Written as the ISO string the services already pass (PostgreSQL parses it); read back from
 * PostgreSQL's text form (`2026-11-28 13:26:47.123+00`, in whatever zone the session has) into that ISO string.
 */
export const timestamptz = customType<{ data: string; driverData: string | Date }>({
  dataType: () => 'timestamp(3) with time zone',
  toDriver: (value) => value,
  fromDriver: (value) => isoFromPostgres(value),
});

/** PostgreSQL's text form of a timestamptz (any session zone, DateStyle ISO) or a Date, as `YYYY-MM-DDTHH:MM:SS.sssZ`. */
export function isoFromPostgres(value: string | Date): string {
  if (value instanceof Date) return value.toISOString();
  // `2026-11-28 13:26:47.123+00`, `...+05:30`, or JSON's `2026-11-28T13:26:47.123+00:00`.
  const s = value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');
  const d = new Date(s);
  if (Number.isNaN(d.getTime())) throw new Error(`not a PostgreSQL timestamp: ${value}`);
  return d.toISOString();
}

/** `bytea`, read and written as a Buffer (what better-sqlite3 gives for a blob; node-postgres reads bytea so). */
export const bytes = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });
