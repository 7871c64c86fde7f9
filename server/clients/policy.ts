import { rule } from '../policy.js';

/** Platform administration: the platform admin only; everyone else gets 404 (auth() does that). */
export const clientsPolicy = {
  manage: rule('admin', 'administer companies'),
};
