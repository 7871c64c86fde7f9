import type { AuditRow } from './query.js';

/** One audit row as the API shows it. */
export function presentAuditEntry(row: AuditRow) {
  return {
    id: row.id,
    at: row.at,
    action: row.action,
    actor_id: row.actorId,
    actor_email: row.actorEmail,
    target: row.target,
    detail: row.detail ?? {},
    request_id: row.requestId,
  };
}
