import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, configSchema, loadConfig } from './config.js';
import { databaseDialect } from './db/dialect.js';

function problem(env: Record<string, string>, overrides = {}): string {
  try {
    loadConfig(env, overrides);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('configuration', () => {
  it('defaults match the issue and the spec Limits table', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      FOOTFALL_DATA_DIR: './data',
      FOOTFALL_HTTP_HOST: '0.0.0.0',
      FOOTFALL_HTTP_PORT: 8080,
      FOOTFALL_MQTT_PORT: 1883,
      FOOTFALL_LOG_LEVEL: 'info',
      FOOTFALL_IMAGES: 'off',
      FOOTFALL_TRUST_PROXY: false,
      // Limits
      FOOTFALL_ACCESS_TOKEN_TTL_S: 12 * 3600, // access token life: up to twelve hours
      FOOTFALL_LOGIN_WINDOW_S: 15 * 60, // login failures ... in 15 minutes
      FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: 10,
      FOOTFALL_LOGIN_MAX_FAILURES_IP: 60,
      FOOTFALL_PASSWORD_MIN_LENGTH: 8,
      FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT: 50,
      FOOTFALL_VISITOR_SEARCH_LIMIT_MAX: 500,
      FOOTFALL_SLUG_MIN_LENGTH: 3,
      FOOTFALL_SLUG_MAX_LENGTH: 32,
      FOOTFALL_ENROLMENT_CODE_DAYS_MAX: 30,
      FOOTFALL_ASSISTANT_MAX_TURNS: 24,
      FOOTFALL_ASSISTANT_MAX_CHARS: 2000,
      FOOTFALL_LIVE_VIEW_MAX_S: 5 * 60,
      FOOTFALL_CHECK_RELEASE_S: 5 * 60,
      FOOTFALL_SNAPSHOT_INTERVAL_S: 60,
    });
    expect(c.FOOTFALL_CAMERA_SYNC_S).toBeLessThanOrEqual(60);
    expect(c.FOOTFALL_MATCH_THRESHOLD).toBe(0.45);
    expect(c.FOOTFALL_BURST_THRESHOLD).toBe(0.4);
    expect(c.FOOTFALL_ADMIN_EMAIL).toBeUndefined();
    expect(c.FOOTFALL_ADMIN_PASSWORD).toBeUndefined();
    expect(c.FOOTFALL_ENCRYPTION_KEY).toBeUndefined();
    expect(c.dataDir).toBe(path.resolve('./data'));
  });

  it('reads every variable from the environment; empty means unset; spaces around numbers are fine', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const c = loadConfig({
      FOOTFALL_DATA_DIR: '/tmp/ff-data',
      FOOTFALL_HTTP_HOST: '127.0.0.1',
      FOOTFALL_HTTP_PORT: ' 9090 ',
      FOOTFALL_MQTT_PORT: '0',
      FOOTFALL_ADMIN_EMAIL: 'root@example.test',
      FOOTFALL_ADMIN_PASSWORD: 'long-enough',
      FOOTFALL_ENCRYPTION_KEY: key,
      FOOTFALL_LOG_LEVEL: 'debug',
      FOOTFALL_TRUST_PROXY: 'TRUE',
      FOOTFALL_ACCESS_TOKEN_TTL_S: '1',
      FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: '',
      UNRELATED: 'x',
    });
    expect(c).toMatchObject({
      dataDir: '/tmp/ff-data',
      FOOTFALL_HTTP_HOST: '127.0.0.1',
      FOOTFALL_HTTP_PORT: 9090,
      FOOTFALL_MQTT_PORT: 0,
      FOOTFALL_ADMIN_EMAIL: 'root@example.test',
      FOOTFALL_ADMIN_PASSWORD: 'long-enough',
      FOOTFALL_ENCRYPTION_KEY: key,
      FOOTFALL_LOG_LEVEL: 'debug',
      FOOTFALL_TRUST_PROXY: true,
      FOOTFALL_ACCESS_TOKEN_TTL_S: 1,
      FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: 10,
    });
    for (const [v, want] of [['false', false], ['off', false], ['0', false], ['Yes', true], ['on', true], ['1', true]] as const) {
      expect(loadConfig({ FOOTFALL_TRUST_PROXY: v }).FOOTFALL_TRUST_PROXY, v).toBe(want);
    }
  });

  it('a bad value stops with a message naming the variable and the value', () => {
    const bad: [string, string][] = [
      ['FOOTFALL_HTTP_PORT', 'abc'],
      ['FOOTFALL_HTTP_PORT', '65536'],
      ['FOOTFALL_HTTP_PORT', '-1'],
      ['FOOTFALL_HTTP_PORT', '80.5'],
      ['FOOTFALL_HTTP_PORT', '0x50'],
      ['FOOTFALL_HTTP_PORT', '8e3'],
      ['FOOTFALL_HTTP_PORT', '   '],
      ['FOOTFALL_MQTT_PORT', 'mqtt'],
      ['FOOTFALL_ACCESS_TOKEN_TTL_S', '0'],
      ['FOOTFALL_ACCESS_TOKEN_TTL_S', '43201'], // more than twelve hours
      ['FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT', '0'],
      ['FOOTFALL_LOG_LEVEL', 'loud'],
      ['FOOTFALL_TRUST_PROXY', 'maybe'],
      ['FOOTFALL_IMAGES', 's3'],
      ['FOOTFALL_ADMIN_EMAIL', 'not-an-email'],
      ['FOOTFALL_BODY_LIMIT_BYTES', '10'],
    ];
    for (const [name, value] of bad) {
      const msg = problem({ [name]: value });
      expect(msg, `${name}=${value}`).toMatch(new RegExp(`^Invalid configuration:\\n  ${name}: `));
      expect(msg, `${name}=${value}`).toContain(JSON.stringify(value));
    }
    expect(problem({ FOOTFALL_HTTP_PORT: 'abc' })).toBe('Invalid configuration:\n  FOOTFALL_HTTP_PORT: must be a whole number from 0 to 65535 (got "abc")');
    expect(problem({ FOOTFALL_HTTP_PORT: '70000' })).toBe('Invalid configuration:\n  FOOTFALL_HTTP_PORT: must be at most 65535 (got "70000")');
  });

  it('names every bad variable at once', () => {
    const msg = problem({ FOOTFALL_HTTP_PORT: 'x', FOOTFALL_MQTT_PORT: 'y', FOOTFALL_LOG_LEVEL: 'z' });
    for (const name of ['FOOTFALL_HTTP_PORT', 'FOOTFALL_MQTT_PORT', 'FOOTFALL_LOG_LEVEL']) expect(msg).toContain(name);
  });

  it('never echoes a secret it refuses', () => {
    const pw = problem({ FOOTFALL_ADMIN_EMAIL: 'root@example.test', FOOTFALL_ADMIN_PASSWORD: 'sekrit7' });
    expect(pw).toMatch(/FOOTFALL_ADMIN_PASSWORD: must be at least 8 characters/);
    expect(pw).not.toContain('sekrit7');
    const key = problem({ FOOTFALL_ENCRYPTION_KEY: 'dG9vLXNob3J0LWtleQ==' });
    expect(key).toMatch(/FOOTFALL_ENCRYPTION_KEY: must be 32 bytes encoded as base64/);
    expect(key).not.toContain('dG9vLXNob3J0LWtleQ==');
  });

  it('cross checks name the variable', () => {
    const cases: [Record<string, string>, string][] = [
      [{ FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT: '600' }, 'FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT: must not exceed FOOTFALL_VISITOR_SEARCH_LIMIT_MAX'],
      [{ FOOTFALL_INVITATION_DAYS_DEFAULT: '31' }, 'FOOTFALL_INVITATION_DAYS_DEFAULT: must not exceed FOOTFALL_INVITATION_DAYS_MAX'],
      [{ FOOTFALL_ENROLMENT_CODE_DAYS_DEFAULT: '20', FOOTFALL_ENROLMENT_CODE_DAYS_MAX: '10' }, 'FOOTFALL_ENROLMENT_CODE_DAYS_DEFAULT: must not exceed FOOTFALL_ENROLMENT_CODE_DAYS_MAX'],
      [{ FOOTFALL_SLUG_MIN_LENGTH: '20', FOOTFALL_SLUG_MAX_LENGTH: '10' }, 'FOOTFALL_SLUG_MIN_LENGTH: must not exceed FOOTFALL_SLUG_MAX_LENGTH'],
      [{ FOOTFALL_ADMIN_PASSWORD: 'long-enough' }, 'FOOTFALL_ADMIN_PASSWORD: set FOOTFALL_ADMIN_EMAIL too'],
    ];
    for (const [env, msg] of cases) expect(problem(env)).toContain(msg);
    // Both failures are reported together.
    const both = problem({ FOOTFALL_SLUG_MIN_LENGTH: '20', FOOTFALL_SLUG_MAX_LENGTH: '10', FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT: '600' });
    expect(both).toContain('FOOTFALL_SLUG_MIN_LENGTH');
    expect(both).toContain('FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT');
    // Overrides (tests) take part in the cross checks.
    expect(problem({}, { FOOTFALL_VISITOR_SEARCH_LIMIT_MAX: 10 })).toContain('FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT');
    expect(loadConfig({ FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT: '500' }).FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT).toBe(500);
  });

  it('overrides win over the environment', () => {
    const c = loadConfig({ FOOTFALL_ACCESS_TOKEN_TTL_S: '100', FOOTFALL_DATA_DIR: '/tmp/a' }, { FOOTFALL_ACCESS_TOKEN_TTL_S: 1, FOOTFALL_DATA_DIR: '/tmp/b' });
    expect(c.FOOTFALL_ACCESS_TOKEN_TTL_S).toBe(1);
    expect(c.dataDir).toBe('/tmp/b');
  });

  it('every variable is a FOOTFALL_ one (but FIREBASE_AUTH_EMULATOR_HOST, the name every Firebase server SDK reads)', () => {
    for (const key of Object.keys(configSchema.shape).filter((k) => k !== 'FIREBASE_AUTH_EMULATOR_HOST')) expect(key).toMatch(/^FOOTFALL_[A-Z0-9_]+$/);
  });

  it('assistant: off by default; the URL is an http(s) base without credentials; the key is never echoed', () => {
    const off = loadConfig({});
    expect(off.FOOTFALL_ASSISTANT_URL).toBeUndefined();
    expect(off.FOOTFALL_ASSISTANT_MODEL).toBeUndefined();
    expect(off.FOOTFALL_ASSISTANT_API_KEY).toBeUndefined();
    expect(off.FOOTFALL_ASSISTANT_TIMEOUT_MS).toBe(60_000);
    expect(off.FOOTFALL_ASSISTANT_MAX_ROUNDS).toBe(4);
    const on = loadConfig({
      FOOTFALL_ASSISTANT_URL: ' http://127.0.0.1:8081/v1/ ',
      FOOTFALL_ASSISTANT_MODEL: 'qwen2.5-7b-instruct',
      FOOTFALL_ASSISTANT_API_KEY: 'sk-abc',
      FOOTFALL_ASSISTANT_TIMEOUT_MS: '30000',
      FOOTFALL_ASSISTANT_MAX_ROUNDS: '2',
    });
    expect(on).toMatchObject({
      FOOTFALL_ASSISTANT_URL: 'http://127.0.0.1:8081/v1',
      FOOTFALL_ASSISTANT_MODEL: 'qwen2.5-7b-instruct',
      FOOTFALL_ASSISTANT_API_KEY: 'sk-abc',
      FOOTFALL_ASSISTANT_TIMEOUT_MS: 30_000,
      FOOTFALL_ASSISTANT_MAX_ROUNDS: 2,
    });
    expect(loadConfig({ FOOTFALL_ASSISTANT_URL: 'https://api.example.com/v1' }).FOOTFALL_ASSISTANT_URL).toBe('https://api.example.com/v1');
    for (const url of ['api.example.com/v1', 'ftp://host/v1', 'http://user:pw@host/v1', 'http://host/v1?key=x', 'http://host/v1#x']) {
      expect(problem({ FOOTFALL_ASSISTANT_URL: url }), url).toMatch(/FOOTFALL_ASSISTANT_URL: must be an http\(s\) base URL/);
    }
    expect(problem({ FOOTFALL_ASSISTANT_TIMEOUT_MS: '10' })).toContain('FOOTFALL_ASSISTANT_TIMEOUT_MS: must be at least 1000');
    expect(problem({ FOOTFALL_ASSISTANT_MAX_ROUNDS: '0' })).toContain('FOOTFALL_ASSISTANT_MAX_ROUNDS');
    const key = problem({ FOOTFALL_ASSISTANT_API_KEY: `sk-${'x'.repeat(5000)}` });
    expect(key).toMatch(/FOOTFALL_ASSISTANT_API_KEY: must be at most 4096 characters \(got a value that is not shown\)/);
    expect(key).not.toContain('sk-x');
    expect(problem({ FOOTFALL_ASSISTANT_MODEL: '   ' })).toContain('FOOTFALL_ASSISTANT_MODEL: must not be blank');
  });

  it('identity-provider endpoints: https, or plain http only to a loopback address', () => {
    expect(loadConfig({}).FOOTFALL_IDP_BASE_URL).toBe('https://identitytoolkit.googleapis.com');
    for (const url of ['https://idp.example.com/', 'http://127.0.0.1:9099', 'http://localhost:9099', 'http://[::1]:9099']) {
      expect(() => loadConfig({ FOOTFALL_IDP_BASE_URL: url, FOOTFALL_IDP_JWKS_URL: `${url}/jwks` }), url).not.toThrow();
    }
    for (const url of ['http://idp.example.com', 'http://10.0.0.5:9099', 'ftp://idp.example.com', 'https://u:p@idp.example.com']) {
      expect(problem({ FOOTFALL_IDP_BASE_URL: url }), url).toMatch(/FOOTFALL_IDP_BASE_URL: must be an https URL/);
      expect(problem({ FOOTFALL_IDP_JWKS_URL: url }), url).toMatch(/FOOTFALL_IDP_JWKS_URL: must be an https URL/);
    }
  });

  it('reads similarity thresholds as numbers from 0 to 1', () => {
    expect(loadConfig({ FOOTFALL_MATCH_THRESHOLD: '0.5' }).FOOTFALL_MATCH_THRESHOLD).toBe(0.5);
    expect(() => loadConfig({ FOOTFALL_MATCH_THRESHOLD: '1.5' })).toThrow(/FOOTFALL_MATCH_THRESHOLD: must be a number from 0 to 1/);
    expect(() => loadConfig({ FOOTFALL_BURST_THRESHOLD: 'high' })).toThrow(/FOOTFALL_BURST_THRESHOLD/);
  });
});

describe('identity provider mode and text messages', () => {
  const google = { FOOTFALL_IDP_PROJECT_ID: 'footfall-x', FOOTFALL_IDP_API_KEY: 'k', FOOTFALL_IDP_SERVICE_ACCOUNT_FILE: '/etc/footfall/sa.json' };
  const problem = (env: Record<string, string>) => {
    try {
      loadConfig(env);
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('embedded by default; google when a Google project is named; emulator when FIREBASE_AUTH_EMULATOR_HOST is set', () => {
    expect(loadConfig({}).idpMode).toBe('embedded');
    expect(loadConfig({ FOOTFALL_IDP_API_KEY: 'lan-key' }).idpMode).toBe('embedded');
    expect(loadConfig(google).idpMode).toBe('google');
    expect(loadConfig({ FOOTFALL_IDP: 'google' }).idpMode).toBe('google'); // not configured: /auth answers 503
    expect(loadConfig({ FOOTFALL_IDP: 'embedded', FOOTFALL_IDP_PROJECT_ID: 'my-shops' }).idpMode).toBe('embedded');
    expect(loadConfig({ FIREBASE_AUTH_EMULATOR_HOST: '127.0.0.1:9099' }).idpMode).toBe('emulator');
    expect(loadConfig({ FOOTFALL_IDP: 'emulator', FIREBASE_AUTH_EMULATOR_HOST: 'localhost:9099' }).idpMode).toBe('emulator');
  });

  it('refuses contradictions and a non-loopback emulator', () => {
    expect(problem({ FOOTFALL_IDP: 'emulator' })).toMatch(/FIREBASE_AUTH_EMULATOR_HOST: required/);
    expect(problem({ FOOTFALL_IDP: 'embedded', FIREBASE_AUTH_EMULATOR_HOST: '127.0.0.1:9099' })).toMatch(/FIREBASE_AUTH_EMULATOR_HOST: set, but FOOTFALL_IDP is embedded/);
    expect(problem({ FIREBASE_AUTH_EMULATOR_HOST: '10.0.0.5:9099' })).toMatch(/FIREBASE_AUTH_EMULATOR_HOST: must be a loopback/);
    expect(problem({ FOOTFALL_IDP: 'cloud' })).toMatch(/FOOTFALL_IDP: must be embedded, google or emulator/);
  });

  it('FOOTFALL_SMS: log by default; http needs a URL; the token is never echoed', () => {
    expect(loadConfig({}).FOOTFALL_SMS).toBe('log');
    expect(problem({ FOOTFALL_SMS: 'http' })).toMatch(/FOOTFALL_SMS_URL: required with FOOTFALL_SMS=http/);
    expect(loadConfig({ FOOTFALL_SMS: 'http', FOOTFALL_SMS_URL: 'https://sms.example.test/send/', FOOTFALL_SMS_TOKEN: 'abc' })).toMatchObject({ FOOTFALL_SMS_URL: 'https://sms.example.test/send', FOOTFALL_SMS_TOKEN: 'abc' });
    expect(problem({ FOOTFALL_SMS: 'http', FOOTFALL_SMS_URL: 'https://user:pw@sms.example.test' })).toMatch(/FOOTFALL_SMS_URL/);
    const m = problem({ FOOTFALL_SMS_TOKEN: 'has a space' });
    expect(m).toMatch(/FOOTFALL_SMS_TOKEN/);
    expect(m).not.toMatch(/has a space/);
  });

  it('FOOTFALL_DATABASE_URL: a PostgreSQL URL selects PostgreSQL (FOOTFALL_POSTGRES_PREVIEW no longer needed nor read); anything else is refused without echoing it', () => {
    expect(loadConfig({}).FOOTFALL_DATABASE_URL).toBeUndefined();
    const url = 'postgres://footfall:secret-pw@db.example:5432/footfall';
    expect(loadConfig({ FOOTFALL_DATABASE_URL: url }).FOOTFALL_DATABASE_URL).toBe(url);
    // An env file written for the preview still starts.
    expect(loadConfig({ FOOTFALL_DATABASE_URL: ` ${url} `, FOOTFALL_POSTGRES_PREVIEW: 'true' }).FOOTFALL_DATABASE_URL).toBe(url);
    const m = problem({ FOOTFALL_DATABASE_URL: 'mysql://footfall:secret-pw@db.example/footfall' });
    expect(m).toMatch(/FOOTFALL_DATABASE_URL: must be a PostgreSQL URL/);
    expect(m).not.toMatch(/secret-pw/);
    expect(databaseDialect({})).toBe('sqlite');
    expect(databaseDialect({ FOOTFALL_DATABASE_URL: ' ' })).toBe('sqlite');
    expect(databaseDialect({ FOOTFALL_DATABASE_URL: 'postgresql://db.example/footfall' })).toBe('postgres');
    expect(databaseDialect({ FOOTFALL_DATABASE_URL: 'POSTGRES://db.example/footfall' })).toBe('postgres');
  });

  it('FOOTFALL_MQTT_URL: unset keeps the embedded broker; mqtt(s)://host:port with head office login; the URL is never echoed', () => {
    expect(loadConfig({}).FOOTFALL_MQTT_URL).toBeUndefined();
    expect(loadConfig({ FOOTFALL_MQTT_URL: 'mqtts://mqtt.example.test:8883', FOOTFALL_MQTT_USERNAME: 'footfall', FOOTFALL_MQTT_PASSWORD: 'pw' })).toMatchObject({
      FOOTFALL_MQTT_URL: 'mqtts://mqtt.example.test:8883',
      FOOTFALL_MQTT_CLIENT_ID: 'footfall-head-office',
    });
    expect(loadConfig({ FOOTFALL_MQTT_URL: 'mqtt://footfall:pw@10.0.0.9:1883' }).FOOTFALL_MQTT_URL).toBe('mqtt://footfall:pw@10.0.0.9:1883');
    expect(problem({ FOOTFALL_MQTT_URL: 'mqtt://10.0.0.9:1883' })).toMatch(/FOOTFALL_MQTT_USERNAME: required with FOOTFALL_MQTT_URL/);
    expect(problem({ FOOTFALL_MQTT_PUBLIC_URL: 'mqtt://10.0.0.9:1883' })).toMatch(/only with FOOTFALL_MQTT_URL/);
    const m = problem({ FOOTFALL_MQTT_URL: 'http://footfall:secret-pw@10.0.0.9' });
    expect(m).toMatch(/FOOTFALL_MQTT_URL: must be mqtt:\/\/host:port/);
    expect(m).not.toMatch(/secret-pw/);
    expect(problem({ FOOTFALL_MQTT_URL: 'mqtt://u:p@host:1883/path' })).toMatch(/FOOTFALL_MQTT_URL/);
  });
});
