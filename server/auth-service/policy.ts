import { denied } from './errors.js';
import type { IdClaims } from './id-tokens.js';
import type { Member } from './service.js';

/**
 * Who the authentication service lets in (docs/auth-service.md, "Who is allowed"). A provider account is allowed
 * when it names exactly one of our users who is an active member of an active company. The platform admin has no
 * tenant, so no place in this app.
 */

export interface Refusal {
  reason: 'no_account' | 'member_inactive' | 'company_suspended' | 'platform_admin' | 'unknown_phone' | 'ambiguous_phone';
  message: string;
}

const refusals: Record<Refusal['reason'], string> = {
  no_account: 'This sign-in has no Footfall account. Sign up, or ask your company to add you to its team.',
  member_inactive: 'This account has been deactivated. Ask a manager or owner of your company to reactivate it.',
  company_suspended: 'Your company is suspended. Contact your Footfall platform administrator.',
  platform_admin: 'The platform administrator signs in to head office, not to this app.',
  unknown_phone: 'This phone number does not belong to any active team member. Ask a manager to add it to your profile.',
  ambiguous_phone: 'This phone number belongs to more than one active team member, so it cannot say who you are. Ask a manager to fix it.',
};

const refusal = (reason: Refusal['reason']): Refusal => ({ reason, message: refusals[reason] });

/** SMS start's only refusal: before a code is verified, no member's state is told (docs/auth-service.md). */
export const unknownPhone = refusal('unknown_phone');

/** Why a linked or found user may not use the app, or undefined when they may. */
export function memberRefusal(m: Member | undefined): Refusal | undefined {
  if (!m) return refusal('no_account');
  if (m.user.companyId === null || m.user.role === 'admin') return refusal('platform_admin');
  if (!m.user.active) return refusal('member_inactive');
  if (!m.company || !m.company.active) return refusal('company_suspended');
  return undefined;
}

/**
 * The member a phone number signs in: exactly one active member of an active company. With none, the most useful
 * refusal is given (a deactivated member hears that they are deactivated); with several, none is chosen.
 */
export function pickStaff(members: Member[]): { member: Member } | { refusal: Refusal } {
  const allowed = members.filter((m) => memberRefusal(m) === undefined);
  if (allowed.length === 1) return { member: allowed[0]! };
  if (allowed.length > 1) return { refusal: refusal('ambiguous_phone') };
  const first = members.map(memberRefusal).find((r) => r !== undefined && r.reason !== 'platform_admin');
  return { refusal: first ?? refusal('unknown_phone') };
}

export function refuse(r: Refusal): never {
  throw denied(r.message, r.reason);
}

/**
 * A phone sign-in (`firebase.sign_in_provider` "phone": the provider verified `phone_number` in this session) is
 * the staff kind; everything else the client kind. A token without that claim is not taken for a phone sign-in
 * whatever claims it carries: its phone number was not verified as far as the token says.
 */
export type SignInKind = 'client' | 'staff';

export function kindOf(claims: IdClaims): SignInKind {
  return claims.signInProvider === 'phone' ? 'staff' : 'client';
}

/**
 * /auth/client/sign-out takes client tokens only and /auth/staff/sign-out staff tokens only (403, nothing revoked):
 * an app calling the other kind's route has mixed up its state. /auth/sign-out takes either.
 */
export function assertSignOutRoute(route: SignInKind | 'any', kind: SignInKind): void {
  if (route === 'any' || route === kind) return;
  throw denied(
    kind === 'staff' ? 'This is a staff (phone) sign-in: sign out with /auth/staff/sign-out or /auth/sign-out.' : 'This is a client (email) sign-in: sign out with /auth/client/sign-out or /auth/sign-out.',
    'wrong_sign_out_route',
    { kind },
  );
}
