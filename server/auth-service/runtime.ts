import type { Config } from '../config.js';
import type { Ctx } from '../context.js';
import { notConfigured } from './errors.js';
import { ProviderKeys } from './id-tokens.js';
import { IdentityProvider } from './provider.js';

/** What the service needs at run time: the provider client and the provider's key cache. One per configuration. */
export interface AuthRuntime {
  projectId: string;
  provider: IdentityProvider;
  keys: ProviderKeys;
}

const runtimes = new WeakMap<Config, AuthRuntime | null>();

/** The service's runtime, or null when FOOTFALL_IDP_* is not set (config.ts checks they come all or none). */
export function runtimeFor(config: Config): AuthRuntime | null {
  let rt = runtimes.get(config);
  if (rt === undefined) {
    const projectId = config.FOOTFALL_IDP_PROJECT_ID;
    const apiKey = config.FOOTFALL_IDP_API_KEY;
    const serviceAccountFile = config.FOOTFALL_IDP_SERVICE_ACCOUNT_FILE;
    rt =
      projectId && apiKey && serviceAccountFile
        ? {
            projectId,
            provider: new IdentityProvider({ projectId, apiKey, baseUrl: config.FOOTFALL_IDP_BASE_URL, serviceAccountFile, timeoutMs: config.FOOTFALL_IDP_TIMEOUT_MS }),
            keys: new ProviderKeys(config.FOOTFALL_IDP_JWKS_URL, config.FOOTFALL_IDP_TIMEOUT_MS),
          }
        : null;
    runtimes.set(config, rt);
  }
  return rt;
}

/** The runtime of this request's server; 503 AUTH_PROVIDER_ERROR (not_configured) when there is none. */
export function runtimeOf(ctx: Ctx): AuthRuntime {
  const rt = runtimeFor(ctx.deps.config);
  if (!rt) throw notConfigured();
  return rt;
}
