import { eq } from 'drizzle-orm';
import { audit } from '../audit/service.js';
import type { Ctx } from '../context.js';
import type { Db } from '../db/open.js';
import { companyPrivacy, type RecognitionMode } from './schema.js';

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
export function privacyOf(db: Db, companyId: string): PrivacySettings {
  const row = db.select().from(companyPrivacy).where(eq(companyPrivacy.companyId, companyId)).get();
  return row ? { ...row } : { ...DEFAULT_PRIVACY };
}

/** The recognition mode shop PCs of the company are told (GET /api/agent/cameras). */
export function recognitionOf(db: Db, companyId: string): RecognitionMode {
  return db.select({ r: companyPrivacy.recognition }).from(companyPrivacy).where(eq(companyPrivacy.companyId, companyId)).get()?.r ?? 'all';
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
export function changePrivacy(ctx: Ctx, companyId: string, change: PrivacyChange): { before: PrivacySettings; after: PrivacySettings } {
  const db = ctx.deps.store.db;
  const before = privacyOf(db, companyId);
  const now = new Date().toISOString();
  const next = {
    recognition: change.recognition ?? before.recognition,
    templateRetentionDays: change.template_retention_days ?? before.templateRetentionDays,
    visitRetentionDays: change.visit_retention_days === undefined ? before.visitRetentionDays : change.visit_retention_days,
    updatedAt: now,
    updatedBy: ctx.state.actor!.email,
    sweepRequestedAt: now,
  };
  db.insert(companyPrivacy)
    .values({ companyId, ...next })
    .onConflictDoUpdate({ target: companyPrivacy.companyId, set: next })
    .run();
  const after = privacyOf(db, companyId);
  audit(ctx, {
    action: 'privacy.update',
    target: companyId,
    detail: {
      from: { recognition: before.recognition, template_retention_days: before.templateRetentionDays, visit_retention_days: before.visitRetentionDays },
      to: { recognition: after.recognition, template_retention_days: after.templateRetentionDays, visit_retention_days: after.visitRetentionDays },
    },
  });
  return { before, after };
}
