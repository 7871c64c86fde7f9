import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import { visitOf } from '../../test/support/faces.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { connectPc, enrol, memberToken, openShop } from '../../test/support/shop-pc.js';
import { settled } from '../../test/support/visits.js';

/**
 * Scheduled report e-mails through a real SMTP server (smtp-server): sent at 07:00 local time in the company's zone
 * (New York: 12:00Z in winter, 11:00Z on the day the clocks go forward), once per period, daily and weekly by each
 * member's choice, none for members who opted out; headline figures against the period before, shops ranked, the
 * CSV attached.
 */
describe('scheduled report e-mails', () => {
  let h: Harness;
  let c: Company;
  let smtp: SMTPServer;
  const mails: ParsedMail[] = [];
  let manager: string;
  let staff: string;

  beforeAll(async () => {
    smtp = new SMTPServer({
      disabledCommands: ['STARTTLS', 'AUTH'],
      onData(stream, _s, cb) {
        simpleParser(stream).then((m) => (mails.push(m), cb()), (err: Error) => cb(err));
      },
    });
    await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
    h = await startHarness({ FOOTFALL_SMTP_HOST: '127.0.0.1', FOOTFALL_SMTP_PORT: (smtp.server.address() as AddressInfo).port, FOOTFALL_REPORT_EMAIL_HOUR: 7 });
    c = await h.company('Digest Deli');
    const shops = [await openShop(h, c.ownerToken, { name: 'Brooklyn', timezone: 'America/New_York' }), await openShop(h, c.ownerToken, { name: 'Queens', timezone: 'America/New_York' })];
    const visits: [number, string][] = [
      [0, '2026-03-06T15:00:00Z'],
      [0, '2026-03-07T15:00:00Z'],
      [1, '2026-03-07T16:00:00Z'],
      [1, '2026-03-07T17:00:00Z'],
      [1, '2026-03-08T17:00:00Z'],
    ];
    for (const [i, s] of shops.entries()) {
      const pc = await connectPc(h, await enrol(h, c.ownerToken, s.slug));
      for (const [n, at] of visits) if (n === i) await pc.publishAsync(upTopic(c.slug, s.slug, 'visit'), JSON.stringify(visitOf({ model: 't' }, undefined, { occurred_at: at })), { qos: 1 });
      await pc.endAsync(true);
    }
    await settled(h);
    manager = await memberToken(h, c.ownerToken, 'manager');
    staff = await memberToken(h, c.ownerToken, 'staff');
  });
  afterAll(async () => {
    await h?.close();
    await new Promise<void>((r) => smtp?.close(() => r()));
  });

  const mine = (email: string) => mails.filter((m) => m.to && !Array.isArray(m.to) && m.to.text === email);

  it('lets each member choose; bad input is refused with the envelope', async () => {
    expect((await h.request('GET', '/api/reports/subscription', { token: c.ownerToken })).body).toMatchObject({ frequency: 'weekly', hour: 7, email: c.ownerEmail });
    expect((await h.request('GET', '/api/reports/subscription', { token: staff })).body.frequency).toBe('off');
    const bad = await h.request('PUT', '/api/reports/subscription', { token: staff, body: { frequency: 'hourly' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'invalid_request', message: expect.stringMatching(/frequency/) });
    expect((await h.request('PUT', '/api/reports/subscription', { token: c.ownerToken, body: { frequency: 'daily' } })).body.frequency).toBe('daily');
    // The staff member asks for the weekly one, then opts out again; the manager keeps the default (weekly).
    await h.request('PUT', '/api/reports/subscription', { token: staff, body: { frequency: 'weekly' } });
    expect((await h.request('PUT', '/api/reports/subscription', { token: staff, body: { frequency: 'off' } })).body.frequency).toBe('off');
  });

  it('sends at 07:00 local time across the spring-forward, once per period, to those who want it', async () => {
    const tick = (iso: string) => h.server.digests.tick(Date.parse(iso));
    // Saturday 7 March, EST (UTC-5): 07:00 is 12:00Z.
    expect(await tick('2026-03-07T11:59:00Z')).toBe(0);
    await tick('2026-03-07T12:00:00Z');
    expect(mine(c.ownerEmail).map((m) => m.subject)).toEqual(['[Footfall] Digest Deli daily report, 2026-03-06: 1 visitors (new)']);
    expect(await tick('2026-03-07T12:30:00Z')).toBe(0);
    // Sunday 8 March: the clocks go forward at 02:00, so 07:00 EDT is 11:00Z.
    expect(await tick('2026-03-08T10:59:00Z')).toBe(0);
    await tick('2026-03-08T11:00:00Z');
    const daily = mine(c.ownerEmail)[1]!;
    expect(daily.subject).toBe('[Footfall] Digest Deli daily report, 2026-03-07: 3 visitors (+200 %)');
    expect(daily.text).toMatch(/Visitors\s+3\s+before:\s+1\s+\(\+200 %\)/);
    expect(daily.text).toMatch(/1\. Queens: 2\n\s+2\. Brooklyn: 1/);
    const csv = daily.attachments[0]!;
    expect(csv.filename).toBe('footfall-2026-03-07-to-2026-03-07.csv');
    // The same columns as format=csv: the first eight, then the additive dwell and band columns (docs/reports.md).
    expect(csv.content.toString('utf8').split('\r\n')[0]).toMatch(/^bucket,visitors,new,returning,not_identified,entries,exits,capture_rate,visits,average_dwell_s,median_dwell_s,/);
    expect(csv.content.toString('utf8')).toContain('2026-03-07T10:00,1,');

    // Monday 9 March, 07:00 EDT: the owner's daily and the manager's weekly (the week before: 2 to 8 March); the staff member opted out.
    await tick('2026-03-09T11:00:00Z');
    expect(mine(c.ownerEmail)).toHaveLength(3);
    const managerEmail = (await h.request('GET', '/api/reports/subscription', { token: manager })).body.email;
    const weekly = mine(managerEmail);
    expect(weekly.map((m) => m.subject)).toEqual(['[Footfall] Digest Deli weekly report, 2026-03-02 to 2026-03-08: 5 visitors (new)']);
    expect(weekly[0]!.attachments[0]!.content.toString('utf8')).toContain('2026-03-08,1,');
    const staffEmail = (await h.request('GET', '/api/reports/subscription', { token: staff })).body.email;
    expect(mine(staffEmail)).toEqual([]);
    expect(await tick('2026-03-09T15:00:00Z')).toBe(0);
  });
});
