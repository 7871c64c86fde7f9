import type { CompanyRow } from '../auth/sessions.js';

export interface CompanyCounts {
  sites: number;
  users: number;
}

/** Company (admin view). `active` is always included: an admin needs to see which companies are suspended. */
export function presentCompany(company: CompanyRow, counts: CompanyCounts) {
  return {
    id: company.id,
    slug: company.slug,
    name: company.name,
    sites: counts.sites,
    users: counts.users,
    created_at: company.createdAt,
    active: company.active,
  };
}
