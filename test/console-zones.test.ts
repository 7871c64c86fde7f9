import { describe, expect, it } from 'vitest';
import { callingCode, companyZone, formatIn, internationalPhone, zoneNames } from '../server/console/web/zones.js';

/** The console's zone and phone helpers (server/console/web/zones.ts), run in Node: they use only Intl. */
describe('console zones and phone numbers', () => {
  it('a local number gets the zone’s country code, trunk 0 dropped; international and short ones stay as typed', () => {
    expect(internationalPhone('98765 43210', 'Asia/Kolkata')).toBe('+919876543210');
    expect(internationalPhone('098765-43210', 'Asia/Kolkata')).toBe('+919876543210');
    expect(internationalPhone('07700 900123', 'Europe/London')).toBe('+447700900123');
    expect(internationalPhone('(415) 555-0100', 'America/Los_Angeles')).toBe('+14155550100');
    expect(internationalPhone('+44 20 7946 0958', 'Asia/Kolkata')).toBe('+44 20 7946 0958');
    expect(internationalPhone('0044 20 7946 0958', 'Asia/Kolkata')).toBe('0044 20 7946 0958');
    expect(internationalPhone('98765', 'Asia/Kolkata')).toBe('98765');
    expect(internationalPhone('call me', 'Asia/Kolkata')).toBe('call me');
    expect(internationalPhone('98765 43210', 'Antarctica/Troll')).toBe('98765 43210');
    expect(internationalPhone('', 'Asia/Kolkata')).toBe('');
    expect(callingCode('Asia/Calcutta')).toBe('91');
  });

  it('the company’s zone is the one most shops share (ties: the first shop’s), Asia/Kolkata with none', () => {
    expect(companyZone([])).toBe('Asia/Kolkata');
    expect(companyZone([{ timezone: 'Europe/London' }, { timezone: 'Asia/Dubai' }])).toBe('Europe/London');
    expect(companyZone([{ timezone: 'Europe/London' }, { timezone: 'Asia/Dubai' }, { timezone: 'Asia/Dubai' }])).toBe('Asia/Dubai');
  });

  it('times are shown in the zone, day month year and a 24-hour clock; the zone list uses today’s names', () => {
    expect(formatIn('2026-11-26T08:35:00Z', 'Asia/Kolkata')).toBe('26 Nov 2026, 14:05');
    expect(formatIn('2026-11-26T23:35:00Z', 'Asia/Kolkata', { time: false })).toBe('27 Nov 2026');
    expect(formatIn(null, 'UTC')).toBe('');
    const names = zoneNames('Asia/Kolkata');
    expect(names).toContain('Asia/Kolkata');
    expect(names).not.toContain('Asia/Calcutta');
    expect(names).toContain('UTC');
  });
});
