/** The API's shapes the console reads (spec: Resources and their fields; extras from docs/shops-and-cameras.md). */

export interface Shop {
  site_id: string;
  slug: string;
  name: string;
  timezone: string;
  online: boolean;
  last_heartbeat_at: string | null;
  last_event_at: string | null;
  enrolled_at?: string | null;
  recognition_model: string | null;
  agent_version: string | null;
  cameras_up: number;
  cameras_total: number;
  fraction_below_gate: number | null;
  /** Additive: camera_id of the camera the placement figure is about (the worst one). */
  worst_camera_id?: string | null;
  queued: number;
  dropped: number;
  /**
   * Body counting (docs/body-counting.md): entries minus exits since the shop's local midnight, and today's entries
   * and exits; null when no camera of the shop has a counting line; absent from a head office without body counting.
   */
  occupancy?: number | null;
  entries_today?: number | null;
  exits_today?: number | null;
  /** Why the shop PC is not counting entries and exits although a camera has a line (its last heartbeat); null: counting. */
  door_counting_problem?: string | null;
  /** Additive (docs/operations.md): opening hours per weekday in the shop's zone, region, occupancy limit; null when not set. */
  opening_hours?: OpeningHours | null;
  region?: string | null;
  occupancy_limit?: number | null;
}

export const WEEKDAY_KEYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type OpeningHours = Record<(typeof WEEKDAY_KEYS)[number], { open: string; close: string }[]>;

/** A point of the picture: 0..1 from the left and from the top. */
export type Point = [number, number];

/** The camera's counting line (shared/agent-api.ts CountingLine): `inside` is the shop's side walking from a to b. */
export interface CountingLine {
  a: Point;
  b: Point;
  inside: 'left' | 'right';
}

export interface Tuning {
  detect_fps: number;
  min_face_px: number;
  rotate: number;
  line?: CountingLine | null;
  /** What the camera is for (docs/shops-and-cameras.md "Camera roles"); head office always sends the role applied. */
  role?: CameraRole;
}

export type CameraRole = 'faces' | 'door' | 'both';

/** A door camera's counting health (GET /api/cameras `counting`). */
export interface CountingHealth {
  role: 'door' | 'both';
  state: 'counting' | 'not_counting' | 'no_line' | 'off' | 'unknown';
  problem: string | null;
  counted_last_hour: number;
  entries_last_hour: number;
  exits_last_hour: number;
  last_crossing_at: string | null;
  detector_keeps_up: boolean | null;
  frames_dropped_share: number | null;
  stats: { window_s: number; frames: number; paced: number; held: number; skipped: number; analysed: number; in: number; out: number } | null;
  stats_at: string | null;
}

export interface ImageRef {
  available: boolean;
  url?: string;
  auth?: boolean;
  reason?: string;
}

export interface Check {
  kind: string;
  state: string;
  ok: boolean;
  verdict: string;
  headline: string;
  advice: string[];
  detail?: { faces?: number; fraction_below_gate?: number };
  image?: ImageRef;
}

export interface Camera {
  id: string;
  site_id: string;
  site: string;
  site_slug?: string;
  camera_id: string;
  label: string;
  host: string;
  port: number;
  path: string;
  username: string;
  has_password: boolean;
  max_width: number;
  tuning?: Tuning;
  revision: number;
  enabled: boolean;
  connected: boolean | null;
  connection_reason?: string;
  last_seen_at: string | null;
  snapshot: ImageRef;
  snapshot_at: string | null;
  check: Check;
  /** Door cameras: counting health; null for a faces camera; absent from an older head office. */
  counting?: CountingHealth | null;
}

/** Additive (docs/reports.md, "Dwell time", "Age and gender bands"): visits, dwell and bands of a point, shop or window. */
export interface VisitMix {
  visits: number;
  average_dwell_s: number;
  median_dwell_s: number;
  age: Record<string, number>;
  gender: Record<string, number>;
  with_age: number;
  with_gender: number;
}

/** Additive (docs/reports.md, "Compared with the period before"): the period before and each figure's change (a ratio). */
export interface Previous {
  from: string;
  to: string;
  [figure: string]: number | string | null;
}

export interface Footfall {
  from: string;
  to: string;
  bucket: string;
  timezone: string;
  points: ({ bucket: string; visitors: number; new: number; returning: number; entries?: number; exits?: number; capture_rate?: number | null; open?: boolean | null } & Partial<VisitMix>)[];
  median_dwell_s?: number;
  age?: Record<string, number>;
  gender?: Record<string, number>;
  with_age?: number;
  with_gender?: number;
  sites?: ({ site_id: string; slug: string; name: string } & VisitMix)[];
  previous?: Previous;
  change?: Record<string, number | null>;
  average_dwell_s?: number;
  /** Additive (docs/reports.md, "Opening hours" and "Regions"). */
  region?: string | null;
  open_hours?: number | null;
  visitors_per_open_hour?: number | null;
  total: number;
  /** Body counting (docs/body-counting.md): crossings of the counting lines in the window; absent on an older head office. */
  entries?: number;
  exits?: number;
  capture_rate?: number | null;
  visits: number;
  fraction_below_gate: number;
  worst_site: string;
}

export interface Conversion {
  visitors: number;
  purchasers: number;
  conversion: number;
  revenue: number;
  average_basket: number;
  currency: string;
  /** Additive (docs/reports.md, "Compared with the period before"). */
  previous?: Previous;
  change?: Record<string, number | null>;
}

export interface Attributes {
  gender?: string;
  age?: number;
  emotion?: string;
}

/** An arrival (visit) of the feed and the stream (spec: Arrival). */
export interface Arrival {
  visit_id: string;
  occurred_at: string;
  site_id: string;
  site: string;
  site_slug: string;
  camera_id: string;
  visitor_id?: string;
  visitor_ref?: string;
  label: string;
  is_new_visitor: boolean;
  /** Seen on a visit before this visit's local day: the reports' "returning" (docs/visits-and-customers.md). */
  returning?: boolean;
  /** A visit is a stay: its latest sighting so far and its length. */
  last_seen_at?: string;
  dwell_s?: number;
  similarity: number;
  quality: number;
  attributes?: Attributes;
  image: ImageRef;
}

export interface Feed {
  arrivals: Arrival[];
  cursor: string;
  polled_at: string;
}

/** A customer (spec: Customer (visitor)). */
export interface Customer {
  id: string;
  ref: string;
  label: string;
  full_name: string;
  phone: string;
  email: string;
  visit_count: number;
  first_seen_at: string;
  last_seen_at: string;
  has_profile: boolean;
  has_consent: boolean;
  /** Additive (docs/visits-and-customers.md): purchases, and their sum in the customer's main currency. */
  purchases: number;
  spend: number;
  spend_currency: string;
  /** Marked staff: no arrivals, left out of reports. */
  staff?: boolean;
}

/** One visit of a customer's history, newest first. */
export interface HistoryRow {
  id: string;
  occurred_at: string;
  site: string;
  site_slug?: string;
  camera_id: string;
  is_new_visitor: boolean;
  last_seen_at?: string;
  dwell_s?: number;
  similarity: number;
  quality: number;
  attributes?: Attributes;
}

/** The answer of DELETE /api/visitors/{id} (docs/visits-and-customers.md, Erasure). */
export interface Erasure {
  erased: string;
  ref: string;
  visits_unlinked: number;
  images_deleted: number;
}

/** "female, 30, happy": the attributes the shop PC sent, or an empty string. */
export function attributesText(a: Attributes | undefined): string {
  if (!a) return '';
  return [a.gender, a.age === undefined ? undefined : String(Math.round(a.age)), a.emotion].filter((x) => x !== undefined && x !== '').join(', ');
}

export interface Member {
  id: string;
  email: string;
  full_name: string;
  role: string;
  active: boolean;
  last_login_at: string;
  created_at: string;
}

export interface Invitation {
  id: string;
  email: string;
  full_name: string;
  role: string;
  code?: string;
  invited_by: string;
  expires_at: string;
  created_at: string;
}

export interface Company {
  id: string;
  slug: string;
  name: string;
  sites: number;
  users: number;
  created_at: string;
  active: boolean;
  /** Additive health (docs/api-conventions.md). */
  shops_online: number;
  last_heartbeat_at: string | null;
  last_visit_at: string | null;
  last_login_at: string | null;
}

/** The spec's placement bands for `fraction_below_gate` (worst camera): under 0.2 good, under 0.5 marginal. */
export function placement(fraction: number | null | undefined, camera?: string | null): { word: string; cls: string } {
  if (fraction === null || fraction === undefined) return { word: 'no faces seen yet', cls: 'unknown' };
  // The figure is the worst camera's: the words name it (issue 28: "needs moving (96 %)" without saying which).
  const pct = `${Math.round(fraction * 100)}% of faces too poor to use${camera ? ` on ${camera}` : ''}`;
  if (fraction < 0.2) return { word: `good (${pct})`, cls: 'good' };
  if (fraction < 0.5) return { word: `marginal (${pct})`, cls: 'warn' };
  return { word: `needs moving (${pct})`, cls: 'bad' };
}

/** The stored profile (docs/visits-and-customers.md: PUT /api/visitors/{id}/profile). */
export interface Profile {
  full_name: string;
  phone: string;
  email: string;
  gender: string;
  date_of_birth: string;
  notes: string;
  consent: boolean;
  consent_changed_at: string | null;
  updated_at: string | null;
}

/** GET /api/visitors/{id}, and the answers of the profile PUT and the merge. */
export interface CustomerDetail extends Customer {
  profile: Profile;
  merged?: { id: string; ref: string; visits_moved: number; visits_joined?: number };
}

/** The answer of POST /api/purchases. */
export interface Purchase {
  id: string;
  visitor_id: string;
  visitor_ref: string;
  /** null when the shop was removed since. */
  site_id: string | null;
  site: string;
  site_slug: string;
  amount: number;
  currency: string;
  items: string[];
  source: string;
  notes: string;
  created_at: string;
  created_by: string;
}
