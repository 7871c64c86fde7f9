import type { CompanyRow, UserRow } from '../auth/sessions.js';
import type { SignInKind } from './policy.js';
import type { BusinessRow } from './service.js';

/** The one place that shapes /auth JSON (spec auth-service-v2, Resources). Every success carries `requestId`. */

export interface ProviderTokens {
  idToken: string;
  refreshToken: string | null;
  expiresInSeconds: number;
}

const tenantJson = (company: CompanyRow) => ({ tenantId: company.id, tenantName: company.name });
const businessJson = (business: BusinessRow) => ({ businessId: business.id, businessName: business.name });

/** Client auth envelope (client sign-in and sign-up). */
export function presentClientEnvelope(tokens: ProviderTokens, user: UserRow, company: CompanyRow, business: BusinessRow, requestId: string) {
  return {
    sessionToken: tokens.idToken,
    refreshToken: tokens.refreshToken,
    expiresInSeconds: tokens.expiresInSeconds,
    user: { id: user.id, email: user.email, displayName: user.fullName, phone: user.phone ?? null },
    tenant: tenantJson(company),
    business: businessJson(business),
    requestId,
  };
}

/** Staff auth envelope (phone verify). `user.phone` is the verified number. */
export function presentStaffEnvelope(tokens: ProviderTokens, user: UserRow, phone: string, requiresProfileSetup: boolean, requestId: string) {
  return {
    sessionToken: tokens.idToken,
    refreshToken: tokens.refreshToken,
    expiresInSeconds: tokens.expiresInSeconds,
    user: { id: user.id, phone },
    staff: { staffId: user.id },
    requiresProfileSetup,
    requestId,
  };
}

export const PROVIDER_NAME = 'firebase';

export function presentSdkStart(phoneNumber: string, requestId: string) {
  return {
    mode: 'CLIENT_IDP_SDK' as const,
    provider: PROVIDER_NAME,
    phoneNumber,
    nextStep:
      'Verify this phone number on the device with the Firebase Authentication SDK (verifyPhoneNumber, then sign in with the code the user receives), ' +
      'then call POST /auth/staff/phone/verify with {"mode":"sign-in","idToken":"<the ID token>"}.',
    requestId,
  };
}

export function presentSmsStart(phoneNumber: string, sessionInfo: string, requestId: string) {
  return { mode: 'IDENTITY_PROVIDER_SMS' as const, phoneNumber, sessionInfo, requestId };
}

export interface SessionContext {
  kind: SignInKind;
  expiresInSeconds: number;
  allowed: boolean;
  reason: string | null;
  message: string | null;
  member?: { user: UserRow; company: CompanyRow; business: BusinessRow } | undefined;
}

/**
 * GET /auth/session. Not allowed: `allowed` false with `reason` and `message`, and no role, user, tenant, business
 * or staff (the app shows the message and signs out locally).
 */
export function presentSession(s: SessionContext, requestId: string) {
  const m = s.allowed ? s.member : undefined;
  return {
    allowed: s.allowed,
    reason: s.reason,
    message: s.message,
    kind: s.kind,
    role: m ? m.user.role : null,
    user: m ? { id: m.user.id, email: m.user.email, displayName: m.user.fullName, phone: m.user.phone ?? null } : null,
    tenant: m ? tenantJson(m.company) : null,
    business: m ? businessJson(m.business) : null,
    staff: m && s.kind === 'staff' ? { staffId: m.user.id } : null,
    expiresInSeconds: s.expiresInSeconds,
    requestId,
  };
}

export function presentSignedOut(requestId: string) {
  return { signedOut: true, requestId };
}
