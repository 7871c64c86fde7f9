import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { memberToken, openShop } from '../../test/support/shop-pc.js';
import { isOpenAt, openHoursBetween, OpeningHoursInput } from './hours.js';

describe('shop settings: opening hours, region, occupancy limit (PATCH /api/sites/{site})', () => {
  let h: Harness;
  let owner: string;
  let manager: string;
  let staff: string;
  let other: string;
  let shop: { site_id: string; slug: string };

  beforeAll(async () => {
    h = await startHarness();
    const c = await h.company('Hours Co');
    owner = c.ownerToken;
    [manager, staff, other] = await Promise.all([memberToken(h, owner, 'manager'), memberToken(h, owner, 'staff'), h.company('Elsewhere').then((o) => o.ownerToken)]);
    shop = await openShop(h, owner, { name: 'Kala Ghoda' });
    await openShop(h, owner, { name: 'Pune Camp' });
  });
  afterAll(() => h.close());

  it('starts with nothing set, then a manager sets hours, region and limit; omitted fields stay, null clears', async () => {
    const before = await h.request('GET', `/api/sites/${shop.slug}`, { token: staff });
    expect(before.body).toMatchObject({ opening_hours: null, region: null, occupancy_limit: null });

    const hours = { mon: [{ open: '10:00', close: '21:00' }], sat: [{ open: '14:00', close: '22:00' }, { open: '09:00', close: '13:00' }], sun: [] };
    const r = await h.request('PATCH', `/api/sites/${shop.slug}`, { token: manager, body: { opening_hours: hours, region: ' Mumbai ', occupancy_limit: 40 } });
    expect(r.status).toBe(200);
    expect(r.body.region).toBe('Mumbai');
    expect(r.body.occupancy_limit).toBe(40);
    // Every weekday present, periods in order.
    expect(r.body.opening_hours).toEqual({
      mon: [{ open: '10:00', close: '21:00' }],
      tue: [],
      wed: [],
      thu: [],
      fri: [],
      sat: [
        { open: '09:00', close: '13:00' },
        { open: '14:00', close: '22:00' },
      ],
      sun: [],
    });

    const kept = await h.request('PATCH', `/api/sites/${shop.site_id}`, { token: owner, body: { occupancy_limit: null } });
    expect(kept.body).toMatchObject({ region: 'Mumbai', occupancy_limit: null });
    expect(kept.body.opening_hours.mon).toEqual([{ open: '10:00', close: '21:00' }]);

    const list = await h.request('GET', '/api/sites?region=Mumbai', { token: staff });
    expect(list.body.map((s: any) => s.slug)).toEqual([shop.slug]);
    const none = await h.request('GET', '/api/sites?region=', { token: staff });
    expect(none.body.map((s: any) => s.slug)).toEqual(['pune-camp']);
    expect((await h.request('GET', '/api/sites', { token: staff })).body).toHaveLength(2);
  });

  it('refuses bad hours, staff, and another company with the envelope', async () => {
    const bad = async (body: unknown, pattern: RegExp) => {
      const r = await h.request('PATCH', `/api/sites/${shop.slug}`, { token: manager, body });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_request');
      expect(r.body.message).toMatch(pattern);
    };
    await bad({ opening_hours: { mon: [{ open: '21:00', close: '10:00' }] } }, /before it opens/);
    await bad({ opening_hours: { mon: [{ open: '9:00', close: '10:00' }] } }, /HH:MM/);
    await bad({ opening_hours: { mon: [{ open: '09:00', close: '12:00' }, { open: '11:00', close: '13:00' }] } }, /overlaps/);
    await bad({ opening_hours: { monday: [] } }, /monday/);
    await bad({ occupancy_limit: 0 }, /occupancy_limit/);
    await bad({ region: 'x'.repeat(101) }, /region/);
    await bad({ slug: 'new-slug' }, /slug/);

    const forbidden = await h.request('PATCH', `/api/sites/${shop.slug}`, { token: staff, body: { region: 'X' } });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toBe('forbidden');
    const foreign = await h.request('PATCH', `/api/sites/${shop.site_id}`, { token: other, body: { region: 'X' } });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('not_found');
    expect((await h.request('GET', `/api/sites/${shop.slug}`, { token: owner })).body.region).toBe('Mumbai');
  });
});

describe('opening hours arithmetic', () => {
  const hours = OpeningHoursInput.parse({ sun: [{ open: '01:00', close: '04:00' }], mon: [{ open: '09:00', close: '24:00' }] });

  it('is open in local wall time', () => {
    // 2026-03-09 is a Monday; 09:30 IST is 04:00Z.
    expect(isOpenAt(hours, 'Asia/Kolkata', Date.parse('2026-03-09T04:00:00Z'))).toBe(true);
    expect(isOpenAt(hours, 'Asia/Kolkata', Date.parse('2026-03-09T03:29:00Z'))).toBe(false);
    expect(isOpenAt(hours, 'Asia/Kolkata', Date.parse('2026-03-09T18:29:00Z'))).toBe(true); // 23:59
    expect(isOpenAt(hours, 'Asia/Kolkata', Date.parse('2026-03-09T18:30:00Z'))).toBe(false); // Tuesday 00:00
  });

  it('counts the hours the clocks really run, across a DST change', () => {
    // New York, Sunday 2026-03-08: clocks jump from 02:00 to 03:00, so 01:00-04:00 is two hours long.
    const lo = Date.parse('2026-03-08T05:00:00Z'); // 00:00 EST
    const hi = Date.parse('2026-03-09T04:00:00Z'); // Monday 00:00 EDT
    expect(openHoursBetween(hours, 'America/New_York', lo, hi)).toBe(2);
    // The whole Monday: 15 hours.
    expect(openHoursBetween(hours, 'America/New_York', hi, hi + 24 * 3_600_000)).toBe(15);
  });
});
