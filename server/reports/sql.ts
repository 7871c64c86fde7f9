import { sql, type SQL } from 'drizzle-orm';
import { bySql, onPostgres } from '../db/raw.js';

/**
 * The few pieces of the reports' SQL that SQLite and PostgreSQL say differently (docs/scale-out.md, "What differs
 * between the drizzle dialects"), each written once here for both. Everything else in the reports' SQL is text both
 * accept. The SQLite text is the one the reports ran before PostgreSQL, unchanged: its plans rest on it (the
 * `indexed by` clauses, the partial index customers_company_first_idx matched by `staff = 0`).
 */

const iso = (ms: number) => new Date(ms).toISOString();

/** Bucket bounds for SQL: one JSON parameter, [[lo, hi], ...] as ISO strings, read by bucketTable (index = bucket number). */
export function boundsJson(buckets: readonly { lo: number; hi: number }[]): string {
  return JSON.stringify(buckets.map((b) => [iso(b.lo), iso(b.hi)]));
}

/**
 * The CTE `b (i, lo, hi)` of the buckets in boundsJson. SQLite compares the ISO text with the ISO text it stores;
 * PostgreSQL stores timestamptz, and a text column does not compare with one, so its bounds are cast (a parameter
 * written straight into a comparison is cast by PostgreSQL itself). json_each's key counts from 0, ordinality from 1.
 * Materialized on PostgreSQL: inlined, the casts ran once per joined row (measured: an hour report of a month over
 * 50 000 visits, 17.9 s inlined, 4.2 s materialized).
 */
export function bucketTable(bounds: string): SQL {
  return bySql(
    sql`b as (select cast(key as integer) as i, value ->> 0 as lo, value ->> 1 as hi from json_each(${bounds}))`,
    sql`b as materialized (select (e.n - 1)::int as i, (e.value ->> 0)::timestamptz as lo, (e.value ->> 1)::timestamptz as hi
      from jsonb_array_elements(${bounds}::jsonb) with ordinality as e(value, n))`,
  );
}

/** The values of a JSON array parameter of strings, as a one-column subquery (`x in (select ...)`). */
export function jsonValues(json: string): SQL {
  return bySql(sql`select value from json_each(${json})`, sql`select jsonb_array_elements_text(${json}::jsonb)`);
}

/**
 * A JSON array of the values as text, for a correlated subquery that must give several numbers in one column
 * (JSON.parse reads it): SQLite's json_array, PostgreSQL's json_build_array cast to text (node-postgres would parse
 * a json column itself).
 */
export function jsonArrayText(values: SQL[]): SQL {
  const list = sql.join(values, sql`, `);
  return bySql(sql`json_array(${list})`, sql`json_build_array(${list})::text`);
}

/**
 * Shops in slug order as SQLite sorts text (by code point): PostgreSQL sorts by the database's collation (en_US
 * would put `a-c` after `ab`), so it is told to compare bytes.
 */
export const bySlug: SQL = bySql(sql`s.slug`, sql`s.slug collate "C"`);

/**
 * The visits (alias v) of each bucket, for a query grouped by bucket and shop: `select ${i} as i, ... from ${join}
 * shops s cross join visits v where ... and ${within} group by ${group}, s.id`. SQLite: the bucket table joined by
 * range, its planner walking visits_shop_time_idx once per bucket. PostgreSQL: that join became a nested loop testing
 * every visit of the window against every bucket (measured: an hour report of a month over 200 000 visits, 8 s for
 * this query alone); buckets lie back to back (calendar.ts bucketsOf), so a visit's bucket is found among their
 * starts by width_bucket, in one pass over the window's visits. Buckets with a gap between them (none today) keep
 * the join on both.
 */
export function visitBuckets(buckets: readonly { lo: number; hi: number }[]): { with: SQL; i: SQL; join: SQL; within: SQL; group: SQL } {
  const contiguous = buckets.length > 0 && buckets.every((b, k) => k === 0 || b.lo === buckets[k - 1]!.hi);
  if (!onPostgres || !contiguous) {
    return { with: sql`with ${bucketTable(boundsJson(buckets))}`, i: sql`b.i`, join: sql`b cross join `, within: sql`v.occurred_at >= b.lo and v.occurred_at < b.hi`, group: sql`b.i` };
  }
  const starts = `{${buckets.map((b) => iso(b.lo)).join(',')}}`;
  return {
    with: sql``,
    i: sql`width_bucket(v.occurred_at, ${starts}::timestamptz[]) - 1`,
    join: sql``,
    within: sql`v.occurred_at >= ${iso(buckets[0]!.lo)} and v.occurred_at < ${iso(buckets[buckets.length - 1]!.hi)}`,
    group: sql`1`,
  };
}
