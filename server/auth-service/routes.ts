import { createHash, randomBytes } from 'node:crypto';
import Router from '@koa/router';
import { auditSignIn, writeAudit } from '../audit/service.js';
import { hashPassword } from '../auth/passwords.js';
import type { CompanyRow, UserRow } from '../auth/sessions.js';
import { createCompanyWithOwner, emailTaken, freeSlug } from '../clients/service.js';
import { slugify } from '../clients/slug.js';
import type { AppRouter, Ctx, Mw } from '../context.js';
import { bearer } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { bodyOf } from '../http/pipeline.js';
import { maskPhone } from '../team/phone.js';
import { PhoneStartBody, PhoneVerifyBody, SignInBody, SignUpBody, body, bookOrThrow, configured, counted, ipOf, providerFailure, secondsLeft, verified } from './pipeline.js';
import { authError, fromProvider, invalid, unauthenticated } from './errors.js';
import { clearKey, forget } from './limits.js';
import { assertSignOutRoute, kindOf, memberRefusal, pickStaff, refuse, unknownPhone, type SignInKind } from './policy.js';
import {
  presentClientEnvelope,
  presentSdkStart,
  presentSession,
  presentSignedOut,
  presentSmsStart,
  presentStaffEnvelope,
  type ProviderTokens,
  type SessionContext,
} from './presenter.js';
import { ProviderError, type PasswordSignIn } from './provider.js';
import { runtimeOf, type AuthRuntime } from './runtime.js';
import {
  ensureBusiness,
  link,
  linkedMember,
  linkPhoneSignIn,
  markSignedIn,
  memberByEmail,
  membersByPhone,
  recordRevocation,
  type LinkMethod,
  type Member,
} from './service.js';


/**
 * The member a client (email) account names: its client link (`sign_up`, `verified_email`), or else a
 * provider-verified email (`method` is then verified_email and the caller links it). Never an unverified email:
 * anyone can create provider accounts. Never a `phone` link: a phone sign-in is resolved by its number every time,
 * and the holder of a phone account (say a recycled number) can give it an email and password at the provider.
 */
async function clientMember(ctx: Ctx, uid: string, verifiedEmail: string | undefined): Promise<{ member: Member | undefined; method: LinkMethod; newLink: boolean }> {
  const db = ctx.deps.store.db;
  const linked = await linkedMember(db, uid);
  if (linked && linked.link.method !== 'phone') return { member: linked, method: linked.link.method, newLink: false };
  const byEmail = verifiedEmail ? (await memberByEmail(db, verifiedEmail)) : undefined;
  return { member: byEmail, method: 'verified_email', newLink: byEmail !== undefined };
}

/**
 * Sign-up met EMAIL_EXISTS at the provider while the address has no account here: most likely an earlier sign-up
 * whose provider answer was lost (timeout) or whose rollback failed. When the caller's password signs that provider
 * account in and the account is linked to nobody here, sign-up adopts it (its tokens); else undefined (409 as
 * before, whatever the reason, so a wrong password is not told apart). The password check counts against the
 * address's sign-in limit like any sign-in.
 */
async function unlinkedAccount(ctx: Ctx, rt: AuthRuntime, email: string, password: string): Promise<PasswordSignIn | undefined> {
  const { store } = ctx.deps;
  const attempt = await bookOrThrow(ctx, 'sign_in', email);
  let signed: PasswordSignIn;
  try {
    signed = await rt.provider.signInWithPassword(email, password, ipOf(ctx));
  } catch (err) {
    const wrongPassword = err instanceof ProviderError && fromProvider(err).error.status === 401;
    if (!wrongPassword) (await store.tx(async () => await forget(store.db, attempt)));
    return undefined;
  }
  return await store.tx(async () => {
    await clearKey(store.db, 'sign_in', email);
    if (await linkedMember(store.db, signed.localId)) return undefined;
    ctx.log.info({ provider_uid: signed.localId }, 'sign-up adopts an unlinked provider account');
    return signed;
  });
}

/** An allowed member's company and business (made now if the company has none yet). Call inside a transaction. */
async function tenancy(ctx: Ctx, m: Member): Promise<{ user: UserRow; company: CompanyRow; business: Awaited<ReturnType<typeof ensureBusiness>> }> {
  const company = m.company!;
  return { user: m.user, company, business: await ensureBusiness(ctx.deps.store.db, company) };
}

export function authServiceRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/auth' });

  // ---- Client ---------------------------------------------------------------------------------------

  r.post('/client/sign-in', configured, body(SignInBody), async (ctx) => {
    const rt = runtimeOf(ctx);
    const { store } = ctx.deps;
    const b = bodyOf(ctx, SignInBody);
    const attempt = await bookOrThrow(ctx, 'sign_in', b.email);
    const signed = await counted(ctx, attempt, 'signInWithPassword', () => rt.provider.signInWithPassword(b.email, b.password, ipOf(ctx)));
    // The password was right from here on: nothing below is a failed guess.
    let found = await clientMember(ctx, signed.localId, undefined);
    if (!found.member) {
      const account = await rt.provider.lookup(signed.idToken).catch(async (err: unknown) => {
        await store.tx(async () => await forget(store.db, attempt));
        return providerFailure(ctx, err, 'lookup');
      });
      found = await clientMember(ctx, signed.localId, account?.emailVerified && account.email ? account.email.toLowerCase() : undefined);
    }
    const refusal = memberRefusal(found.member);
    if (refusal) {
      await store.tx(async () => await forget(store.db, attempt));
      ctx.log.info({ provider_uid: signed.localId, reason: refusal.reason }, 'client sign-in refused');
      refuse(refusal);
    }
    const m = found.member!;
    const t = await store.tx(async () => {
      await clearKey(store.db, 'sign_in', b.email);
      await link(store.db, signed.localId, m.user.id, found.method, true);
      await markSignedIn(store.db, m.user.id);
      await auditSignIn(store, m.user, 'client', ctx.state.requestId);
      return await tenancy(ctx, m);
    });
    const tokens: ProviderTokens = { idToken: signed.idToken, refreshToken: signed.refreshToken, expiresInSeconds: Number(signed.expiresIn) };
    ctx.body = presentClientEnvelope(tokens, t.user, t.company, t.business, ctx.state.requestId);
  });

  r.post('/client/sign-up', configured, body(SignUpBody), async (ctx) => {
    const rt = runtimeOf(ctx);
    const { store, config, log } = ctx.deps;
    const b = bodyOf(ctx, SignUpBody);
    const min = config.FOOTFALL_PASSWORD_MIN_LENGTH;
    if (b.password.length < min) throw invalid(`password: must be at least ${min} characters`, { reason: 'invalid_body', fields: { password: `must be at least ${min} characters` } });
    const derived = slugify(b.companyName, config.FOOTFALL_SLUG_MAX_LENGTH);
    if (derived.length < config.FOOTFALL_SLUG_MIN_LENGTH) {
      throw invalid('companyName: must contain some letters or digits', { reason: 'invalid_body', fields: { companyName: 'must contain some letters or digits' } });
    }
    const emailInUse = () =>
      authError(409, 'VALIDATION_ERROR', 'This email address already has an account. Sign in instead.', { reason: 'email_taken', fields: { email: 'already has an account' } });
    // Every sign-up counts per IP (the answer below says whether an address has an account here).
    const attempt = await bookOrThrow(ctx, 'sign_up', '-');
    if (await emailTaken(store.db, b.email)) throw emailInUse();
    // Embedded provider: the account is the owner's users row, with this password (it works on /api too).
    // Otherwise the owner signs in through the provider; the local password (used by /api only) is random and never shown.
    const embedded = rt.embedded;
    const passwordHash = await hashPassword(embedded ? b.password : randomBytes(32).toString('base64url'));
    let adopted = false;
    const created = embedded
      ? undefined
      : await rt.provider.signUp(b.email, b.password).catch(async (err: unknown) => {
      if (err instanceof ProviderError && err.kind === 'unavailable') (await store.tx(async () => await forget(store.db, attempt)));
      if (err instanceof ProviderError && err.code === 'EMAIL_EXISTS') {
        const orphan = await unlinkedAccount(ctx, rt, b.email, b.password);
        if (orphan) {
          adopted = true;
          return orphan;
        }
      }
      return providerFailure(ctx, err, 'signUp');
    });
    let made;
    try {
      made = await store.tx(async () => {
        const slug = await freeSlug(store.db, derived, config.FOOTFALL_SLUG_MAX_LENGTH);
        const ownerName = b.email.split('@')[0]!;
        const { company, owner } = await createCompanyWithOwner(store.db, { name: b.companyName, slug, ownerEmail: b.email, ownerName, passwordHash });
        const uid = created?.localId ?? owner.id;
        await link(store.db, uid, owner.id, 'sign_up', true);
        await markSignedIn(store.db, owner.id);
        const business = await ensureBusiness(store.db, company);
        await writeAudit(store, {
          action: 'auth_service.sign_up',
          companyId: company.id,
          target: company.id,
          actorId: owner.id,
          actorEmail: owner.email,
          requestId: ctx.state.requestId,
          detail: { slug, business_id: business.id, provider_uid: uid, ...(adopted ? { adopted_provider_account: true } : {}) },
        });
        return { user: { ...owner, lastLoginAt: new Date().toISOString() }, company, business };
      });
    } catch (err) {
      // Our half failed: the provider account must not stay behind (it would hold the address without an account here).
      if (created) {
        await rt.provider.deleteAccount(created.idToken).catch((e: unknown) => {
          log.error({ provider_uid: created.localId, provider_code: e instanceof ProviderError ? e.code : 'unknown', req_id: ctx.state.requestId }, 'sign-up rollback: the provider account could not be deleted');
        });
      }
      if (err instanceof HttpError && err.code === 'conflict') throw emailInUse();
      throw err;
    }
    ctx.status = 201;
    const signed = created ?? (await embedded!.tokensFor(made.user, 'password'));
    const tokens: ProviderTokens = { idToken: signed.idToken, refreshToken: signed.refreshToken, expiresInSeconds: Number(signed.expiresIn) };
    ctx.body = presentClientEnvelope(tokens, made.user, made.company, made.business, ctx.state.requestId);
  });

  // ---- Staff ----------------------------------------------------------------------------------------

  r.post('/staff/phone/start', configured, body(PhoneStartBody), async (ctx) => {
    const rt = runtimeOf(ctx);
    const { store } = ctx.deps;
    const b = bodyOf(ctx, PhoneStartBody);
    if (b.recaptchaToken === undefined && b.playIntegrityToken === undefined) {
      ctx.body = presentSdkStart(b.phoneNumber, ctx.state.requestId);
      return;
    }
    // Counted before anything else, unknown numbers included, so the answer cannot be used to list members quickly.
    const attempt = await bookOrThrow(ctx, 'sms', b.phoneNumber);
    const pick = pickStaff(await membersByPhone(store.db, b.phoneNumber));
    if ('refusal' in pick) {
      // Nobody has proved they hold this number yet: the answer says no more than unknown_phone (not whether the
      // number is a deactivated member's, a suspended company's or shared). The log keeps the real reason.
      ctx.log.info({ phone: maskPhone(b.phoneNumber), reason: pick.refusal.reason }, 'phone start refused');
      refuse(unknownPhone);
    }
    const sent = await rt.provider.sendVerificationCode({ phoneNumber: b.phoneNumber, recaptchaToken: b.recaptchaToken, playIntegrityToken: b.playIntegrityToken }).catch(async (err: unknown) => {
      if (err instanceof ProviderError && err.kind === 'unavailable') (await store.tx(async () => await forget(store.db, attempt)));
      return providerFailure(ctx, err, 'sendVerificationCode');
    });
    ctx.body = presentSmsStart(b.phoneNumber, sent.sessionInfo, ctx.state.requestId);
  });

  r.post('/staff/phone/verify', configured, body(PhoneVerifyBody), async (ctx) => {
    const rt = runtimeOf(ctx);
    const { store } = ctx.deps;
    const b = bodyOf(ctx, PhoneVerifyBody);
    let uid: string;
    let phone: string;
    let tokens: ProviderTokens;
    if (b.idToken !== undefined) {
      // Device path: the app verified the phone with the SDK; the token must be a phone sign-in.
      const attempt = await bookOrThrow(ctx, 'token', '-');
      const claims = await verified(ctx, rt, b.idToken).catch(async (err: unknown) => {
        // Only a token that fails verification counts; keys that could not be fetched do not.
        if (!(err instanceof HttpError && err.status === 401)) (await store.tx(async () => await forget(store.db, attempt)));
        throw err;
      });
      await store.tx(async () => await forget(store.db, attempt));
      if (kindOf(claims) !== 'staff' || !claims.phone) throw unauthenticated('This ID token is not from a phone sign-in. Verify the phone number with the SDK first.', 'not_a_phone_sign_in');
      uid = claims.uid;
      phone = claims.phone;
      tokens = { idToken: b.idToken, refreshToken: null, expiresInSeconds: secondsLeft(claims.exp) };
    } else {
      // SMS path: the service exchanges the session and the code with the provider.
      const key = createHash('sha256').update(b.sessionInfo!).digest('hex').slice(0, 32);
      const attempt = await bookOrThrow(ctx, 'code', key);
      const signed = await counted(ctx, attempt, 'signInWithPhoneNumber', () => rt.provider.signInWithPhoneNumber(b.sessionInfo!, b.code!));
      await store.tx(async () => await clearKey(store.db, 'code', key));
      if (!signed.phoneNumber) providerFailure(ctx, new ProviderError('unavailable', 'NO_PHONE_NUMBER'), 'signInWithPhoneNumber');
      uid = signed.localId;
      phone = signed.phoneNumber!;
      tokens = { idToken: signed.idToken, refreshToken: signed.refreshToken, expiresInSeconds: Number(signed.expiresIn) };
    }
    const pick = pickStaff(await membersByPhone(store.db, phone));
    if ('refusal' in pick) {
      ctx.log.info({ provider_uid: uid, phone: maskPhone(phone), reason: pick.refusal.reason }, 'staff sign-in refused');
      refuse(pick.refusal);
    }
    const user = pick.member.user;
    const firstTime = await store.tx(async () => {
      const first = await linkPhoneSignIn(store.db, uid, user.id);
      await markSignedIn(store.db, user.id);
      await auditSignIn(store, user, 'phone', ctx.state.requestId);
      return first;
    });
    ctx.body = presentStaffEnvelope(tokens, user, phone, firstTime, ctx.state.requestId);
  });

  // ---- Shared ---------------------------------------------------------------------------------------

  r.get('/session', configured, async (ctx) => {
    const rt = runtimeOf(ctx);
    const { store } = ctx.deps;
    const claims = await verified(ctx, rt, bearer(ctx.get('Authorization')));
    const kind = kindOf(claims);
    let member: Member | undefined;
    let refusal;
    let newLink = false;
    if (kind === 'staff') {
      const pick = claims.phone ? pickStaff(await membersByPhone(store.db, claims.phone)) : undefined;
      if (pick && 'member' in pick) member = pick.member;
      else refusal = pick?.refusal ?? memberRefusal(undefined);
    } else {
      const found = await clientMember(ctx, claims.uid, claims.emailVerified ? claims.email : undefined);
      member = found.member;
      newLink = found.newLink;
      refusal = memberRefusal(member);
    }
    const s: SessionContext = { kind, expiresInSeconds: secondsLeft(claims.exp), allowed: !refusal, reason: refusal?.reason ?? null, message: refusal?.message ?? null };
    if (!refusal && member) {
      const m = member;
      s.member = await store.tx(async () => {
        if (newLink) await link(store.db, claims.uid, m.user.id, 'verified_email', false);
        return await tenancy(ctx, m);
      });
    }
    ctx.body = presentSession(s, ctx.state.requestId);
  });

  const signOut = (route: SignInKind | 'any'): Mw => async (ctx) => {
    const rt = runtimeOf(ctx);
    const { store } = ctx.deps;
    const claims = await verified(ctx, rt, bearer(ctx.get('Authorization')));
    assertSignOutRoute(route, kindOf(claims));
    // Every token authenticated up to this second is refused from now on, here and at the provider.
    const validSince = Math.floor(Date.now() / 1000) + 1;
    await rt.provider.revokeSessions(claims.uid, validSince).catch((err: unknown) => providerFailure(ctx, err, 'revoke'));
    await store.tx(async () => await recordRevocation(store.db, claims.uid, validSince));
    ctx.log.info({ provider_uid: claims.uid, kind: kindOf(claims) }, 'signed out');
    ctx.body = presentSignedOut(ctx.state.requestId);
  };
  r.post('/client/sign-out', configured, signOut('client'));
  r.post('/staff/sign-out', configured, signOut('staff'));
  r.post('/sign-out', configured, signOut('any'));

  return r;
}
