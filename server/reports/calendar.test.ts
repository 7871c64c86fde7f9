import { describe, expect, it } from 'vitest';
import { bucketsOf, isDate, localToUtc, mondayOf, todayIn, windowOf, previousWindow } from './calendar.js';

const iso = (t: number) => new Date(t).toISOString();
/** [label, UTC start, hours] of each bucket. */
const spans = (bs: { label: string; lo: number; hi: number }[]) => bs.map((b) => [b.label, iso(b.lo), (b.hi - b.lo) / 3_600_000]);

describe('report calendar (local wall time to UTC with Intl)', () => {
  it('local midnight and hours to UTC: a repeated wall time is its first instant, a skipped one the jump', () => {
    expect(iso(localToUtc('Asia/Kolkata', '2026-03-09'))).toBe('2026-03-08T18:30:00.000Z');
    expect(iso(localToUtc('America/New_York', '2026-03-08', 2))).toBe('2026-03-08T07:00:00.000Z'); // 02:00 never happens
    expect(iso(localToUtc('America/New_York', '2026-03-08', 3))).toBe('2026-03-08T07:00:00.000Z');
    expect(iso(localToUtc('America/New_York', '2026-11-01', 1))).toBe('2026-11-01T05:00:00.000Z'); // 01:00 EDT, not EST
    expect(iso(localToUtc('America/Havana', '2026-03-08'))).toBe('2026-03-08T05:00:00.000Z'); // the day starts at 01:00
    expect(iso(localToUtc('UTC', '2026-01-01', 5))).toBe('2026-01-01T05:00:00.000Z');
  });

  it('hour buckets: the repeated hour is one bucket of two hours, the skipped hour none, half-hour shifts too', () => {
    const fallBack = bucketsOf('America/New_York', '2026-11-01', '2026-11-01', 'hour');
    expect(fallBack).toHaveLength(24);
    expect(spans(fallBack).slice(0, 3)).toEqual([
      ['2026-11-01T00:00', '2026-11-01T04:00:00.000Z', 1],
      ['2026-11-01T01:00', '2026-11-01T05:00:00.000Z', 2],
      ['2026-11-01T02:00', '2026-11-01T07:00:00.000Z', 1],
    ]);
    const spring = bucketsOf('America/New_York', '2026-03-08', '2026-03-08', 'hour');
    expect(spring.map((b) => b.label)).not.toContain('2026-03-08T02:00');
    expect(spring).toHaveLength(23);
    // Lord Howe Island moves its clocks by half an hour.
    expect(spans(bucketsOf('Australia/Lord_Howe', '2026-10-04', '2026-10-04', 'hour')).slice(1, 4)).toEqual([
      ['2026-10-04T01:00', '2026-10-03T14:30:00.000Z', 1],
      ['2026-10-04T02:00', '2026-10-03T15:30:00.000Z', 0.5],
      ['2026-10-04T03:00', '2026-10-03T16:00:00.000Z', 1],
    ]);
    // Buckets tile the window exactly.
    for (const [tz, from, to] of [['America/New_York', '2026-03-01', '2026-03-31'], ['Asia/Kolkata', '2026-01-01', '2026-01-31'], ['Europe/London', '2026-10-20', '2026-11-19']] as const) {
      const bs = bucketsOf(tz, from, to, 'hour');
      const w = windowOf(tz, from, to);
      expect(bs[0]!.lo).toBe(w.lo);
      expect(bs.at(-1)!.hi).toBe(w.hi);
      for (let i = 1; i < bs.length; i++) expect(bs[i]!.lo).toBe(bs[i - 1]!.hi);
    }
  });

  it('day, week and month buckets', () => {
    expect(spans(bucketsOf('America/New_York', '2026-03-07', '2026-03-09', 'day'))).toEqual([
      ['2026-03-07', '2026-03-07T05:00:00.000Z', 24],
      ['2026-03-08', '2026-03-08T05:00:00.000Z', 23],
      ['2026-03-09', '2026-03-09T04:00:00.000Z', 24],
    ]);
    expect(spans(bucketsOf('America/New_York', '2026-03-04', '2026-03-20', 'week'))).toEqual([
      ['2026-03-02', '2026-03-04T05:00:00.000Z', 5 * 24 - 1], // Wednesday to Sunday, with the spring-forward
      ['2026-03-09', '2026-03-09T04:00:00.000Z', 7 * 24],
      ['2026-03-16', '2026-03-16T04:00:00.000Z', 5 * 24], // Monday to Friday
    ]);
    expect(spans(bucketsOf('Asia/Kolkata', '2025-12-15', '2026-02-10', 'month'))).toEqual([
      ['2025-12', '2025-12-14T18:30:00.000Z', 17 * 24],
      ['2026-01', '2025-12-31T18:30:00.000Z', 31 * 24],
      ['2026-02', '2026-01-31T18:30:00.000Z', 10 * 24],
    ]);
    expect(bucketsOf('UTC', '2024-01-01', '2025-12-31', 'month')).toHaveLength(24);
  });

  it('dates: real calendar dates only; Monday of the ISO week; today in a zone', () => {
    expect(['2026-02-28', '2024-02-29', '1970-01-01', '9998-12-31'].every(isDate)).toBe(true);
    // A window reaches a month past `to`: year 9999 would need year 10000, which YYYY-MM-DD cannot write.
    expect(['2026-02-29', '2026-13-01', '2026-1-01', '20260101', '1969-12-31', ' 2026-01-01', '9999-01-01', '9999-12-31'].some(isDate)).toBe(false);
    expect(mondayOf('2026-03-08')).toBe('2026-03-02'); // a Sunday
    expect(mondayOf('2026-03-09')).toBe('2026-03-09');
    expect(mondayOf('2026-01-01')).toBe('2025-12-29');
    expect(todayIn('Asia/Kolkata', new Date('2026-03-09T18:30:00Z'))).toBe('2026-03-10');
    expect(todayIn('Asia/Kolkata', new Date('2026-03-09T18:29:59Z'))).toBe('2026-03-09');
    expect(todayIn('America/New_York', new Date('2026-03-09T03:59:59Z'))).toBe('2026-03-08');
  });
});

describe('previousWindow: the period a report is compared with', () => {
  it('whole months compare with as many whole months before; anything else with as many days just before', () => {
    expect(previousWindow('2026-03-01', '2026-03-31')).toEqual({ from: '2026-02-01', to: '2026-02-28' });
    expect(previousWindow('2026-02-01', '2026-02-28')).toEqual({ from: '2026-01-01', to: '2026-01-31' });
    expect(previousWindow('2026-01-01', '2026-12-31')).toEqual({ from: '2025-01-01', to: '2025-12-31' });
    expect(previousWindow('2026-02-01', '2026-04-30')).toEqual({ from: '2025-11-01', to: '2026-01-31' });
    // Whole ISO weeks: Monday to Sunday before; seven days; one day; a month so far (28 days before, not October 1-28).
    expect(previousWindow('2026-03-09', '2026-03-15')).toEqual({ from: '2026-03-02', to: '2026-03-08' });
    expect(previousWindow('2026-11-22', '2026-11-28')).toEqual({ from: '2026-11-15', to: '2026-11-21' });
    expect(previousWindow('2026-03-01', '2026-03-01')).toEqual({ from: '2026-02-28', to: '2026-02-28' });
    expect(previousWindow('2026-11-01', '2026-11-28')).toEqual({ from: '2026-10-04', to: '2026-10-31' });
    // Before 1970 is still a period (nothing in it).
    expect(previousWindow('1970-01-01', '1970-01-10')).toEqual({ from: '1969-12-22', to: '1969-12-31' });
  });
});
