import { eq } from 'drizzle-orm';
import { audit } from '../audit/service.js';
import type { Ctx } from '../context.js';
import type { Db } from '../db/open.js';
import { type RecognitionMode } from './schema.js';
import { one } from '../db/query.js';
import { companyPrivacy } from '../db/tables.js';

export interface PrivacySettings {
  recognition: RecognitionMode;
  templateRetentionDays: number;
  visitRetentionDays: number | null;
  updatedAt: string | null;
  updatedBy: string | null;
  sweepRequestedAt: string | null;
  sweptAt: string | null;
}

export const DEFAULT_PRIVACY: PrivacySettings = {
  recognition: 'all',
  templateRetentionDays: 90,
  visitRetentionDays: null,
  updatedAt: null,
  updatedBy: null,
  sweepRequestedAt: null,
  sweptAt: null,
};

/** A company's settings: its row, or the defaults when it never changed them. */
export async function privacyOf(db: Db, companyId: string): Promise<PrivacySettings> {
  const row = await one(db.select().from(companyPrivacy).where(eq(companyPrivacy.companyId, companyId)));
  return row ? { ...row } : { ...DEFAULT_PRIVACY };
}

/** The recognition mode shop PCs of the company are told (GET /api/agent/cameras). */
export async function recognitionOf(db: Db, companyId: string): Promise<RecognitionMode> {
  return (await one(db.select({ r: companyPrivacy.recognition }).from(companyPrivacy).where(eq(companyPrivacy.companyId, companyId))))?.r ?? 'all';
}

export interface PrivacyChange {
  recognition?: RecognitionMode;
  template_retention_days?: number;
  visit_retention_days?: number | null;
}

/**
 * Applies a change (inside the caller's transaction): stores it, asks for a sweep (the sweep clears the request once
 * it has applied it) and audits what changed. Returns the settings before and after.
 */
export async function changePrivacy(ctx: Ctx, companyId: string, change: PrivacyChange): Promise<{ before: PrivacySettings; after: PrivacySettings }> {
  const db = ctx.deps.store.db;
  const before = await privacyOf(db, companyId);
  const now = new Date().toISOString();
  const next = {
    recognition: change.recognition ?? before.recognition,
    templateRetentionDays: change.template_retention_days ?? before.templateRetentionDays,
    visitRetentionDays: change.visit_retention_days === undefined ? before.visitRetentionDays : change.visit_retention_days,
    updatedAt: now,
    updatedBy: ctx.state.actor!.email,
    sweepRequestedAt: now,
  };
  await db.insert(companyPrivacy)
    .values({ companyId, ...next })
    .onConflictDoUpdate({ target: companyPrivacy.companyId, set: next });
  const after = await privacyOf(db, companyId);
  await audit(ctx, {
    action: 'privacy.update',
    target: companyId,
    detail: {
      from: { recognition: before.recognition, template_retention_days: before.templateRetentionDays, visit_retention_days: before.visitRetentionDays },
      to: { recognition: after.recognition, template_retention_days: after.templateRetentionDays, visit_retention_days: after.visitRetentionDays },
    },
  });
  return { before, after };
}
