import type { presentCamera } from '../cameras/presenter.js';
import type { presentSite } from '../shops/presenter.js';

/** The answer of POST /api/assistant: the reply and the tools consulted for it, in the order first called. */
export function presentAnswer(answer: { text: string; used: string[] }) {
  return { text: answer.text, used: answer.used };
}

// Tool results are the API's own JSON (the domains' presenters), cut to what answers questions: the model gets no
// broker user names, camera addresses or user names, and fewer tokens.

/** A Shop (GET /api/sites) for the model. */
export function shopForTool(s: ReturnType<typeof presentSite>) {
  return {
    site_id: s.site_id,
    name: s.name,
    slug: s.slug,
    timezone: s.timezone,
    online: s.online,
    last_heartbeat_at: s.last_heartbeat_at,
    last_event_at: s.last_event_at,
    cameras_up: s.cameras_up,
    cameras_total: s.cameras_total,
    fraction_below_gate: s.fraction_below_gate,
    queued: s.queued,
    dropped: s.dropped,
    occupancy: s.occupancy,
    entries_today: s.entries_today,
    exits_today: s.exits_today,
  };
}

/** A Camera (GET /api/cameras) for the model, with its last check. */
export function cameraForTool(c: ReturnType<typeof presentCamera>) {
  const k = c.check as Record<string, unknown>;
  return {
    id: c.id,
    camera_id: c.camera_id,
    label: c.label,
    site: c.site,
    site_slug: c.site_slug,
    enabled: c.enabled,
    connected: c.connected,
    connection_reason: c.connection_reason,
    last_seen_at: c.last_seen_at,
    check: checkForTool(k),
  };
}

/** A Check object for the model: the verdict and the words written for people, not the picture. */
export function checkForTool(k: Record<string, unknown>) {
  const { image: _image, ...rest } = k;
  return rest;
}
