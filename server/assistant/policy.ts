import { atLeast, rule, type Role, type Rule } from '../policy.js';

/**
 * The assistant (spec: Assistant). Any member of a company may ask; the platform admin has no company, so (as on every
 * tenant route) the route does not exist for them (404). Each tool applies the rule of the HTTP route it stands for
 * (server/assistant/tools.ts), so the assistant can do nothing its user could not do through the API.
 */
export const assistantPolicy = {
  ask: rule('staff', 'use the assistant'),
};

/**
 * Whether a rule lets this role through: the test auth() applies on the route, for a tool that stands for that
 * route. A tool refuses with the rule's own message ("Only a manager or owner can run camera checks.").
 */
export function allows(r: Rule, role: Role): boolean {
  if (r.least === 'any') return true;
  if (r.least === 'admin') return role === 'admin';
  return atLeast(role, r.least);
}
