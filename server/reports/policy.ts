import { rule } from '../policy.js';

/**
 * Reports (spec: Reports; "reports ... authed"). Every member of the company reads them. The rule is a tenant
 * role, so the platform admin, who has no company, gets the 404 of every tenant route.
 */
export const reportsPolicy = {
  view: rule('staff', 'see reports'),
};
