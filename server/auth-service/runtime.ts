import type { Logger } from 'pino';
import type { Config, IdpMode } from '../config.js';
import type { Ctx } from '../context.js';
import type { Store } from '../db/open.js';
import { EmbeddedProvider } from '../idp/adapter.js';
import { loadSigningKeys } from '../idp/keys.js';
import { EmbeddedIdp } from '../idp/service.js';
import { notConfigured } from './errors.js';
import { ProviderKeys, verifyEmulatorToken, verifyIdToken, type IdClaims } from './id-tokens.js';
import { IdentityProvider, type AccountProvider } from './provider.js';

/** What the service needs at run time: the provider and how its ID tokens are checked. One per configuration. */
export interface AuthRuntime {
  mode: IdpMode;
  projectId: string;
  provider: AccountProvider;
  /** Signature (or, for the emulator, claims only) of a provider ID token; revocation is the caller's. */
  verify(token: string): Promise<IdClaims>;
  /** The embedded provider, in mode `embedded`. */
  embedded?: EmbeddedIdp;
}

/** The project of the embedded provider's tokens (iss/aud) when FOOTFALL_IDP_PROJECT_ID is not set. */
export const EMBEDDED_PROJECT_ID = 'footfall';
/** The emulator's project when FOOTFALL_IDP_PROJECT_ID is not set (`demo-`: the emulator's offline projects). */
export const EMULATOR_PROJECT_ID = 'demo-footfall';

const runtimes = new WeakMap<Config, AuthRuntime | null>();

/**
 * Builds the runtime of this configuration at start (the embedded provider's keys are read or made here) and
 * says at start what it is: the emulator mode and a missing Google configuration are warnings, once.
 */
export async function startAuthRuntime(config: Config, store: Store, log: Logger): Promise<AuthRuntime | null> {
  const timeoutMs = config.FOOTFALL_IDP_TIMEOUT_MS;
  let rt: AuthRuntime | null;
  if (config.idpMode === 'embedded') {
    const projectId = config.FOOTFALL_IDP_PROJECT_ID ?? EMBEDDED_PROJECT_ID;
    const keys = await loadSigningKeys(config.dataDir);
    const embedded = new EmbeddedIdp({ store, config, keys, projectId, log });
    rt = { mode: 'embedded', projectId, provider: new EmbeddedProvider(embedded), verify: async (t) => verifyIdToken(t, projectId, keys), embedded };
    log.info({ idp: 'embedded', project_id: projectId, kid: keys.kid, key_file: keys.file, key_rotated: keys.rotated, sms: config.FOOTFALL_SMS }, 'identity provider: embedded (head office signs its own ID tokens)');
  } else if (config.idpMode === 'emulator') {
    const projectId = config.FOOTFALL_IDP_PROJECT_ID ?? EMULATOR_PROJECT_ID;
    const baseUrl = `http://${config.FIREBASE_AUTH_EMULATOR_HOST!}/identitytoolkit.googleapis.com`;
    const provider = new IdentityProvider({ projectId, apiKey: config.FOOTFALL_IDP_API_KEY ?? 'fake-api-key', baseUrl, emulator: true, timeoutMs });
    rt = { mode: 'emulator', projectId, provider, verify: async (t) => verifyEmulatorToken(t, projectId) };
    log.warn(
      { idp: 'emulator', emulator_host: config.FIREBASE_AUTH_EMULATOR_HOST, project_id: projectId },
      'identity provider: the Firebase Auth EMULATOR; its unsigned ID tokens are accepted for this project. Never use this outside development.',
    );
  } else {
    const projectId = config.FOOTFALL_IDP_PROJECT_ID;
    const apiKey = config.FOOTFALL_IDP_API_KEY;
    const serviceAccountFile = config.FOOTFALL_IDP_SERVICE_ACCOUNT_FILE;
    if (projectId && apiKey && serviceAccountFile) {
      const keys = new ProviderKeys(config.FOOTFALL_IDP_JWKS_URL, timeoutMs);
      const provider = new IdentityProvider({ projectId, apiKey, baseUrl: config.FOOTFALL_IDP_BASE_URL, serviceAccountFile, timeoutMs });
      rt = { mode: 'google', projectId, provider, verify: (t) => verifyIdToken(t, projectId, keys) };
      log.info({ idp: 'google', project_id: projectId }, 'identity provider: Google Identity Platform');
    } else {
      rt = null;
      log.warn({ idp: 'google', reason: 'not_configured' }, 'identity provider: FOOTFALL_IDP=google without FOOTFALL_IDP_PROJECT_ID, _API_KEY and _SERVICE_ACCOUNT_FILE; every /auth route answers 503 not_configured');
    }
  }
  runtimes.set(config, rt);
  return rt;
}

/** The runtime startAuthRuntime made for this configuration (null: not configured, or not started). */
export function runtimeFor(config: Config): AuthRuntime | null {
  return runtimes.get(config) ?? null;
}

/** The runtime of this request's server; 503 AUTH_PROVIDER_ERROR (not_configured) when there is none. */
export function runtimeOf(ctx: Ctx): AuthRuntime {
  const rt = runtimeFor(ctx.deps.config);
  if (!rt) throw notConfigured();
  return rt;
}
