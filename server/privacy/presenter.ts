import type { PrivacySettings } from './service.js';

export function presentPrivacy(s: PrivacySettings) {
  return {
    recognition: s.recognition,
    template_retention_days: s.templateRetentionDays,
    visit_retention_days: s.visitRetentionDays,
    updated_at: s.updatedAt,
    updated_by: s.updatedBy,
    /** A change not yet applied to existing data by the sweep. */
    sweep_pending: s.sweepRequestedAt !== null,
    swept_at: s.sweptAt,
  };
}
