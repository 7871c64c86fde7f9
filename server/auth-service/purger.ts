/**
 * Company deletion, first of the purgers: the identity-provider accounts linked to the company's people are deleted
 * at the provider (accounts:batchDelete with the service account), then their local sign-out records. A deleted
 * company leaves no sign-in account behind. It runs first because the provider is the step most likely to fail, and
 * a failure then stops the deletion with nothing touched. Without FOOTFALL_IDP_* there is no provider to call:
 * nothing is deleted there (the operator turned the provider off; docs/auth-service.md).
 */
import { eq, inArray } from 'drizzle-orm';
import type { CompanyPurger } from '../clients/deletion.js';
import type { Config } from '../config.js';
import type { Store } from '../db/open.js';
import { runtimeFor } from './runtime.js';
import { users, idpLinks, idpRevocations } from '../db/tables.js';

export function providerAccountsPurger(config: Config, store: Store): CompanyPurger {
  return {
    name: 'provider_accounts',
    failure: {
      status: 502,
      code: 'identity_provider_error',
      message: "The identity provider did not delete the company's sign-in accounts, so nothing was deleted. Try again later.",
    },
    async purge(companyId) {
      const rt = runtimeFor(config);
      if (!rt) return 0;
      const uids = (await store.db
        .select({ uid: idpLinks.providerUid })
        .from(idpLinks)
        .innerJoin(users, eq(users.id, idpLinks.userId))
        .where(eq(users.companyId, companyId)))
        .map((r) => r.uid);
      if (uids.length === 0) return 0;
      const deleted = await rt.provider.deleteAccountsByUid(uids);
      await store.tx(async () => {
        for (let i = 0; i < uids.length; i += 500) (await store.db.delete(idpRevocations).where(inArray(idpRevocations.providerUid, uids.slice(i, i + 500))));
      });
      return deleted;
    },
  };
}
