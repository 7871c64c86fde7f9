import path from 'node:path';
import { z } from 'zod';
import { isPostgresUrl } from './db/dialect.js';

/**
 * Head-office configuration, read from FOOTFALL_* environment variables.
 * Every limit in the spec's Limits table is here with the spec's default, so tests can shorten them.
 * README's configuration table lists every variable; keep the two in step.
 */

/** Digits only: Number() would read " " as 0, "0x1F" as 31 and "1e3" as 1000. */
const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
const bool = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], 'must be true or false'))
  .transform((v) => ['true', '1', 'yes', 'on'].includes(v));

/** Never echoed back in an error message. */
const secret = new Set(['FOOTFALL_DATABASE_URL', 'FOOTFALL_MQTT_URL', 'FOOTFALL_MQTT_PASSWORD', 'FOOTFALL_ADMIN_PASSWORD', 'FOOTFALL_ENCRYPTION_KEY', 'FOOTFALL_ASSISTANT_API_KEY', 'FOOTFALL_IDP_API_KEY', 'FOOTFALL_METRICS_TOKEN', 'FOOTFALL_SMS_TOKEN', 'FOOTFALL_SMTP_PASSWORD']);

/** A loopback host: localhost, 127.0.0.0/8 or ::1. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === '[::1]';
}

/**
 * An http(s) URL without user name or password (credentials go in their own variables) or fragment, and without a
 * query unless `query` allows one; with `httpsOnly`, plain http only to a loopback address (a local emulator or a
 * test stand-in). Kept without a trailing slash.
 */
function httpUrl(opts: { query: boolean; httpsOnly?: boolean; message: string }) {
  return z
    .string()
    .trim()
    .refine((v) => {
      try {
        const u = new URL(v);
        const scheme = u.protocol === 'https:' || (u.protocol === 'http:' && (!opts.httpsOnly || isLoopback(u.hostname)));
        return scheme && !u.username && !u.password && !u.hash && (opts.query || !u.search);
      } catch {
        return false;
      }
    }, opts.message)
    .transform((v) => v.replace(/\/+$/, ''));
}

/** The assistant's LLM service: the base URL of an OpenAI-compatible Chat Completions API (".../v1"). */
const serviceUrl = httpUrl({
  query: false,
  message: 'must be an http(s) base URL such as http://127.0.0.1:8081/v1, without user name, password, query or fragment (the key goes in FOOTFALL_ASSISTANT_API_KEY)',
});

/** An identity-provider endpoint: https (its keys and the passwords sent to it must not cross a network in clear). */
const idpUrl = httpUrl({
  query: true,
  httpsOnly: true,
  message: 'must be an https URL such as https://identitytoolkit.googleapis.com (plain http only to a loopback address, e.g. a local emulator)',
});

/** mqtt:// or mqtts:// with a host and a port (a user name and password allowed; no path, query or fragment). */
const mqttUrl = z.string().refine((v) => {
  try {
    const u = new URL(v);
    return (u.protocol === 'mqtt:' || u.protocol === 'mqtts:') && u.hostname !== '' && (u.pathname === '' || u.pathname === '/') && u.search === '' && u.hash === '';
  } catch {
    return false;
  }
}, 'must be mqtt://host:port or mqtts://host:port (optionally mqtt://user:password@host:port)');

export const configSchema = z.object({
  FOOTFALL_DATA_DIR: z.string().min(1).default('./data'),
  FOOTFALL_HTTP_HOST: z.string().min(1).default('0.0.0.0'),
  FOOTFALL_HTTP_PORT: int(0, 65535).default(8080),
  FOOTFALL_MQTT_HOST: z.string().min(1).default('0.0.0.0'),
  FOOTFALL_MQTT_PORT: int(0, 65535).default(1883),
  // An external broker (Mosquitto 2 with its dynamic-security plugin) instead of the embedded one (docs/operations.md,
  // "An external MQTT broker"). Head office's own login: FOOTFALL_MQTT_USERNAME and _PASSWORD, or in the URL.
  FOOTFALL_MQTT_URL: mqttUrl.optional(),
  // PostgreSQL instead of the embedded SQLite file (docs/scale-out.md). FOOTFALL_POSTGRES_PREVIEW, required beside it
  // until PostgreSQL left the preview (session 32), is no longer read: an env file that still sets it starts as before.
  FOOTFALL_DATABASE_URL: z
    .string()
    .trim()
    .min(1)
    .refine(isPostgresUrl, 'must be a PostgreSQL URL: postgres://user:password@host:5432/database')
    .optional(),
  FOOTFALL_MQTT_USERNAME: z.string().min(1).optional(),
  FOOTFALL_MQTT_PASSWORD: z.string().min(1).optional(),
  /** The broker's address as shop PCs reach it (enrolment answer); default: FOOTFALL_MQTT_URL's host and port. */
  FOOTFALL_MQTT_PUBLIC_URL: mqttUrl.optional(),
  /** Head office's client ids on the external broker start with this (its ingest session is `<prefix>-ingest`). */
  FOOTFALL_MQTT_CLIENT_ID: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'must be 1 to 40 letters, digits, dashes or underscores').default('footfall-head-office'),
  FOOTFALL_ADMIN_EMAIL: z.email().optional(),
  FOOTFALL_ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
  FOOTFALL_ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes encoded as base64 (openssl rand -base64 32)')
    .optional(),
  FOOTFALL_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  FOOTFALL_TRUST_PROXY: bool.default(false),
  FOOTFALL_FAST_LANE: bool.default(true),
  FOOTFALL_BODY_LIMIT_BYTES: int(1024, 64 * 1024 * 1024).default(1024 * 1024),
  FOOTFALL_IMAGES: z.enum(['off', 'local']).default('off'),

  // Limits (spec: Limits).
  FOOTFALL_ACCESS_TOKEN_TTL_S: int(1, 43_200).default(43_200),
  FOOTFALL_REFRESH_TOKEN_TTL_S: int(60, 365 * 86_400).default(30 * 86_400),
  FOOTFALL_LOGIN_WINDOW_S: int(1, 86_400).default(900),
  FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: int(1, 10_000).default(10),
  FOOTFALL_LOGIN_MAX_FAILURES_IP: int(1, 100_000).default(60),
  FOOTFALL_PASSWORD_MIN_LENGTH: int(8, 128).default(8),
  FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT: int(1, 10_000).default(50),
  FOOTFALL_VISITOR_SEARCH_LIMIT_MAX: int(1, 10_000).default(500),
  FOOTFALL_SLUG_MIN_LENGTH: int(1, 32).default(3),
  FOOTFALL_SLUG_MAX_LENGTH: int(3, 64).default(32),
  FOOTFALL_INVITATION_DAYS_DEFAULT: int(1, 365).default(7),
  FOOTFALL_INVITATION_DAYS_MAX: int(1, 365).default(30),
  FOOTFALL_ENROLMENT_CODE_DAYS_DEFAULT: int(1, 30).default(7),
  FOOTFALL_ENROLMENT_CODE_DAYS_MAX: int(1, 30).default(30),
  FOOTFALL_ASSISTANT_MAX_TURNS: int(1, 1000).default(24),
  FOOTFALL_ASSISTANT_MAX_CHARS: int(1, 100_000).default(2000),
  // The assistant's LLM (docs/assistant.md). No URL: the assistant is off (501 assistant_off).
  FOOTFALL_ASSISTANT_URL: serviceUrl.optional(),
  FOOTFALL_ASSISTANT_MODEL: z.string().trim().min(1, 'must not be blank').max(200, 'must be at most 200 characters').optional(),
  FOOTFALL_ASSISTANT_API_KEY: z.string().trim().min(1, 'must not be blank').max(4096, 'must be at most 4096 characters').optional(),
  FOOTFALL_ASSISTANT_TIMEOUT_MS: int(1000, 600_000).default(60_000),
  FOOTFALL_ASSISTANT_MAX_ROUNDS: int(1, 10).default(4),
  // The authentication service's identity provider (docs/auth-service.md). `embedded` (the default): head office is
  // the provider itself (server/idp). `google`: Google Identity Platform; project, key and service account come all
  // three or none; none: every /auth route answers 503 AUTH_PROVIDER_ERROR (not_configured). `emulator`: the Firebase
  // Auth emulator at FIREBASE_AUTH_EMULATOR_HOST (set alone it picks this mode, as every Firebase server SDK does).
  // Unset: emulator when FIREBASE_AUTH_EMULATOR_HOST is set, google when the three FOOTFALL_IDP_* are, else embedded.
  FOOTFALL_IDP: z.enum(['embedded', 'google', 'emulator'], 'must be embedded, google or emulator').optional(),
  FIREBASE_AUTH_EMULATOR_HOST: z
    .string()
    .trim()
    .regex(/^(localhost|127(\.\d{1,3}){3}|\[::1\]):\d{1,5}$/, 'must be a loopback host and port such as 127.0.0.1:9099')
    .optional(),
  FOOTFALL_IDP_PROJECT_ID: z.string().trim().regex(/^[a-z0-9][a-z0-9-]{2,62}$/, 'must be a project id: lower-case letters, digits and dashes').optional(),
  FOOTFALL_IDP_API_KEY: z.string().trim().min(1, 'must not be blank').max(512, 'must be at most 512 characters').optional(),
  FOOTFALL_IDP_BASE_URL: idpUrl.default('https://identitytoolkit.googleapis.com'),
  FOOTFALL_IDP_JWKS_URL: idpUrl.default('https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com'),
  FOOTFALL_IDP_SERVICE_ACCOUNT_FILE: z.string().trim().min(1).optional(),
  FOOTFALL_IDP_TIMEOUT_MS: int(100, 120_000).default(10_000),
  FOOTFALL_IDP_SMS_MAX_PER_PHONE: int(1, 1000).default(5),
  FOOTFALL_IDP_SMS_MAX_PER_IP: int(1, 100_000).default(20),
  FOOTFALL_IDP_CODE_MAX_ATTEMPTS: int(1, 100).default(5),
  // Text messages of the embedded provider (docs/auth-service.md): `log` writes the code to the server log, `http`
  // POSTs {"to","text"} as JSON to FOOTFALL_SMS_URL (bearer FOOTFALL_SMS_TOKEN when set).
  FOOTFALL_SMS: z.enum(['log', 'http'], 'must be log or http').default('log'),
  FOOTFALL_SMS_URL: httpUrl({ query: true, message: 'must be an http(s) URL without user name, password or fragment (the token goes in FOOTFALL_SMS_TOKEN)' }).optional(),
  FOOTFALL_SMS_TOKEN: z.string().trim().regex(/^[\x21-\x7e]{1,4096}$/, 'must be printable characters without spaces').optional(),
  FOOTFALL_LIVE_VIEW_MAX_S: int(1, 3600).default(300),
  FOOTFALL_CHECK_RELEASE_S: int(1, 3600).default(300),
  FOOTFALL_HEARTBEAT_INTERVAL_S: int(1, 3600).default(30),
  FOOTFALL_SNAPSHOT_INTERVAL_S: int(5, 3600).default(60),
  FOOTFALL_CAMERA_SYNC_S: int(5, 3600).default(60),
  FOOTFALL_VISITS_LIMIT_DEFAULT: int(1, 100_000).default(100),
  FOOTFALL_VISITS_LIMIT_MAX: int(1, 100_000).default(1000),
  FOOTFALL_INGEST_BATCH_MS: int(0, 1000).default(20),
  // A visit is a stay (docs/visits-and-customers.md): a customer seen again in the same shop within this many seconds
  // of their last sighting there is still on the same visit (0: only overlapping sightings join).
  FOOTFALL_VISIT_GAP_S: int(0, 86_400).default(1800),
  // Privacy (docs/privacy.md): audit rows older than this many days are deleted; the privacy sweep runs this often.
  FOOTFALL_AUDIT_RETENTION_DAYS: int(1, 36_500).default(730),
  FOOTFALL_PRIVACY_SWEEP_S: int(10, 86_400).default(300),
  // Report threads (docs/reports.md): reports are computed off the event loop; 0 computes them on it, as before.
  FOOTFALL_REPORT_WORKERS: int(0, 16).default(1),
  // Face matching (docs/recognition.md, docs/identity.md): cosine similarity of 512-d embeddings.
  FOOTFALL_MATCH_THRESHOLD: z.string().trim().regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a number from 0 to 1').transform(Number).default(0.45),
  FOOTFALL_BURST_THRESHOLD: z.string().trim().regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a number from 0 to 1').transform(Number).default(0.4),
  FOOTFALL_SSE_KEEPALIVE_S: int(1, 3600).default(15),
  // Alerts (docs/operations.md, "Alerts"): how often the rules are evaluated; deliveries retried with back-off
  // (FOOTFALL_ALERT_RETRY_BASE_S, doubling, at most an hour apart) until FOOTFALL_ALERT_RETRY_MAX attempts.
  FOOTFALL_ALERT_INTERVAL_S: int(1, 3600).default(30),
  FOOTFALL_ALERT_RETRY_BASE_S: int(1, 3600).default(30),
  FOOTFALL_ALERT_RETRY_MAX: int(1, 50).default(8),
  FOOTFALL_WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(10_000),
  // E-mail (alerts): off unless FOOTFALL_SMTP_HOST is set. FOOTFALL_SMTP_SECURE: TLS from the start (port 465);
  // otherwise STARTTLS when the server offers it.
  FOOTFALL_SMTP_HOST: z.string().trim().min(1).max(253).optional(),
  FOOTFALL_SMTP_PORT: int(1, 65_535).default(587),
  FOOTFALL_SMTP_SECURE: bool.default(false),
  FOOTFALL_SMTP_USER: z.string().trim().min(1).max(320).optional(),
  FOOTFALL_SMTP_PASSWORD: z.string().min(1).max(1024).optional(),
  FOOTFALL_SMTP_FROM: z.string().trim().min(3).max(320).default('Footfall <footfall@localhost>'),
  // Scheduled report e-mails (docs/reports.md): sent at this local hour (0-23) in the company's zone.
  FOOTFALL_REPORT_EMAIL_HOUR: int(0, 23).default(7),
  // Prometheus metrics at GET /metrics (docs/operations.md): on when a scrape token is set, read as a bearer token.
  FOOTFALL_METRICS_TOKEN: z
    .string()
    .trim()
    .regex(/^[\x21-\x7e]{24,512}$/, 'must be 24 to 512 printable characters without spaces (openssl rand -hex 32)')
    .optional(),
});

export type RawConfig = z.infer<typeof configSchema>;

export type IdpMode = 'embedded' | 'google' | 'emulator';

export interface Config extends RawConfig {
  dataDir: string;
  /** The identity provider in use (FOOTFALL_IDP, or what the other variables imply). */
  idpMode: IdpMode;
}

/**
 * FOOTFALL_IDP when set; else emulator when FIREBASE_AUTH_EMULATOR_HOST is, google when a Google project or service
 * account is named (today's configurations keep working), else embedded.
 */
export function idpModeOf(cfg: RawConfig): IdpMode {
  if (cfg.FOOTFALL_IDP) return cfg.FOOTFALL_IDP;
  if (cfg.FIREBASE_AUTH_EMULATOR_HOST) return 'emulator';
  if (cfg.FOOTFALL_IDP_PROJECT_ID !== undefined || cfg.FOOTFALL_IDP_SERVICE_ACCOUNT_FILE !== undefined) return 'google';
  return 'embedded';
}

export class ConfigError extends Error {}

/** Validates the environment. A bad value throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<RawConfig> = {}): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') picked[key] = v;
  }
  const parsed = configSchema.safeParse(picked);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const key = String(i.path[0] ?? 'config');
      return `${key}: ${i.message} (got ${secret.has(key) ? 'a value that is not shown' : JSON.stringify(picked[key] ?? '')})`;
    });
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const cfg = { ...parsed.data, ...overrides };
  const idpMode = idpModeOf(cfg);
  const crossChecks: [boolean, string][] = [
    [cfg.FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT <= cfg.FOOTFALL_VISITOR_SEARCH_LIMIT_MAX, 'FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT: must not exceed FOOTFALL_VISITOR_SEARCH_LIMIT_MAX'],
    [cfg.FOOTFALL_VISITS_LIMIT_DEFAULT <= cfg.FOOTFALL_VISITS_LIMIT_MAX, 'FOOTFALL_VISITS_LIMIT_DEFAULT: must not exceed FOOTFALL_VISITS_LIMIT_MAX'],
    [cfg.FOOTFALL_INVITATION_DAYS_DEFAULT <= cfg.FOOTFALL_INVITATION_DAYS_MAX, 'FOOTFALL_INVITATION_DAYS_DEFAULT: must not exceed FOOTFALL_INVITATION_DAYS_MAX'],
    [cfg.FOOTFALL_ENROLMENT_CODE_DAYS_DEFAULT <= cfg.FOOTFALL_ENROLMENT_CODE_DAYS_MAX, 'FOOTFALL_ENROLMENT_CODE_DAYS_DEFAULT: must not exceed FOOTFALL_ENROLMENT_CODE_DAYS_MAX'],
    [cfg.FOOTFALL_SLUG_MIN_LENGTH <= cfg.FOOTFALL_SLUG_MAX_LENGTH, 'FOOTFALL_SLUG_MIN_LENGTH: must not exceed FOOTFALL_SLUG_MAX_LENGTH'],
    [cfg.FOOTFALL_ADMIN_PASSWORD === undefined || cfg.FOOTFALL_ADMIN_EMAIL !== undefined, 'FOOTFALL_ADMIN_PASSWORD: set FOOTFALL_ADMIN_EMAIL too'],
    [cfg.FOOTFALL_MQTT_URL !== undefined || (cfg.FOOTFALL_MQTT_PUBLIC_URL ?? cfg.FOOTFALL_MQTT_USERNAME ?? cfg.FOOTFALL_MQTT_PASSWORD) === undefined, 'FOOTFALL_MQTT_PUBLIC_URL, FOOTFALL_MQTT_USERNAME, FOOTFALL_MQTT_PASSWORD: only with FOOTFALL_MQTT_URL (the external broker)'],
    [cfg.FOOTFALL_MQTT_URL === undefined || (cfg.FOOTFALL_MQTT_USERNAME ?? new URL(cfg.FOOTFALL_MQTT_URL).username) !== '', "FOOTFALL_MQTT_USERNAME: required with FOOTFALL_MQTT_URL (head office's own login on the broker), or give it in the URL"],
    [cfg.FOOTFALL_SMS !== 'http' || cfg.FOOTFALL_SMS_URL !== undefined, 'FOOTFALL_SMS_URL: required with FOOTFALL_SMS=http (the SMS gateway)'],
    [idpMode !== 'emulator' || cfg.FIREBASE_AUTH_EMULATOR_HOST !== undefined, 'FIREBASE_AUTH_EMULATOR_HOST: required with FOOTFALL_IDP=emulator (host:port of the Firebase Auth emulator)'],
    [idpMode === 'emulator' || cfg.FIREBASE_AUTH_EMULATOR_HOST === undefined, `FIREBASE_AUTH_EMULATOR_HOST: set, but FOOTFALL_IDP is ${idpMode}; unset one of them`],
    [
      idpMode !== 'google' ||
        [cfg.FOOTFALL_IDP_PROJECT_ID, cfg.FOOTFALL_IDP_API_KEY, cfg.FOOTFALL_IDP_SERVICE_ACCOUNT_FILE].every((v) => v === undefined) ||
        [cfg.FOOTFALL_IDP_PROJECT_ID, cfg.FOOTFALL_IDP_API_KEY, cfg.FOOTFALL_IDP_SERVICE_ACCOUNT_FILE].every((v) => v !== undefined),
      'FOOTFALL_IDP_PROJECT_ID, FOOTFALL_IDP_API_KEY, FOOTFALL_IDP_SERVICE_ACCOUNT_FILE: set all three (the identity provider) or none',
    ],
  ];
  const failed = crossChecks.filter(([ok]) => !ok).map(([, msg]) => msg);
  if (failed.length > 0) throw new ConfigError(`Invalid configuration:\n  ${failed.join('\n  ')}`);
  return { ...cfg, idpMode, dataDir: path.resolve(cfg.FOOTFALL_DATA_DIR) };
}
