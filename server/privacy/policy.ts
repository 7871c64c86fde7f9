import { rule } from '../policy.js';

/** Privacy settings (docs/privacy.md): owners only, reading included (they decide what is kept). */
export const privacyPolicy = {
  read: rule('owner', 'see the privacy settings'),
  change: rule('owner', 'change the privacy settings'),
};
