/**
 * Roles and the shape of every authorisation rule. Each domain's policy.ts builds its rules with `rule()`,
 * and routes enforce them with `auth(rule)`; handlers never check roles themselves.
 * Tenant roles are strictly nested: staff < manager < owner. `admin` is the platform admin, outside every tenant.
 */
export const tenantRoles = ['staff', 'manager', 'owner'] as const;
export type TenantRole = (typeof tenantRoles)[number];
export type Role = TenantRole | 'admin';

/** Who may call: `any` signed-in person (admin included), a tenant role or above, or the platform admin only. */
export type Least = 'any' | TenantRole | 'admin';

export interface Rule {
  least: Least;
  /** Shown with 403: says who can. */
  message: string;
}

const rank: Record<TenantRole, number> = { staff: 1, manager: 2, owner: 3 };

const who: Record<TenantRole, string> = {
  staff: 'A member of the company',
  manager: 'Only a manager or owner',
  owner: 'Only an owner',
};

/** rule('manager', 'invite people') -> 403 message "Only a manager or owner can invite people." */
export function rule(least: Least, doing: string): Rule {
  const message = least === 'any' || least === 'admin' ? `You cannot ${doing}.` : `${who[least]} can ${doing}.`;
  return { least, message };
}

export function atLeast(role: Role, least: TenantRole): boolean {
  return role !== 'admin' && rank[role] >= rank[least];
}

export function isTenantRole(role: string): role is TenantRole {
  return (tenantRoles as readonly string[]).includes(role);
}

export function whoCan(least: TenantRole): string {
  return who[least];
}
