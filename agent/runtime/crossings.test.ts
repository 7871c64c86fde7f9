import { describe, expect, it } from 'vitest';
import { CrossingMessage } from '../../shared/messages.js';
import { crossingMessage } from './crossings.js';

describe('crossingMessage', () => {
  it('is a valid wire message whose id is a UUIDv7, later crossings sorting after earlier ones', async () => {
    const first = crossingMessage('door', { direction: 'in', at: new Date('2026-12-01T10:00:00Z'), trackId: 't1' });
    await new Promise((r) => setTimeout(r, 2));
    const second = crossingMessage('door', { direction: 'out', at: new Date('2026-12-01T10:00:01Z'), trackId: 't2' });
    for (const m of [first, second]) {
      expect(CrossingMessage.safeParse(m).success).toBe(true);
      expect(m.crossing_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    expect(second.crossing_id > first.crossing_id).toBe(true);
    expect(first).toMatchObject({ camera_id: 'door', direction: 'in', occurred_at: '2026-12-01T10:00:00.000Z', track_id: 't1' });
  });
});
