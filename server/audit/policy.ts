import { rule } from '../policy.js';

/** The audit trail (docs/privacy.md, "The audit trail"). */
export const auditPolicy = {
  read: rule('owner', 'read the audit trail'),
};
