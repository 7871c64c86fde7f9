import { z } from 'zod';

/** The alert rules (docs/operations.md, "Alerts"). */
export const ALERT_KINDS = ['shop_offline', 'camera_down', 'door_not_counting', 'occupancy_over_limit', 'faces_too_poor'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface Rule {
  enabled: boolean;
  /** How long the condition must hold before the alert is raised, in minutes. */
  after_minutes: number;
  /** faces_too_poor: the share of faces below the gate (0 to 1) above which a camera is too poor. */
  threshold?: number;
}
export type AlertRules = Record<AlertKind, Rule>;

export const DEFAULT_RULES: AlertRules = {
  shop_offline: { enabled: true, after_minutes: 0 },
  camera_down: { enabled: true, after_minutes: 2 },
  door_not_counting: { enabled: true, after_minutes: 60 },
  occupancy_over_limit: { enabled: true, after_minutes: 0 },
  faces_too_poor: { enabled: true, after_minutes: 0, threshold: 0.5 },
};

const RuleInput = z
  .object({
    enabled: z.boolean().optional(),
    after_minutes: z.number().int('must be a whole number').min(0, 'must be 0 or more').max(1440, 'must be at most 1440 (a day)').optional(),
    threshold: z.number().min(0, 'must be from 0 to 1').max(1, 'must be from 0 to 1').optional(),
  })
  .strict();

/** A partial rule set: each rule named is merged over the current one. */
export const RulesInput = z.object(Object.fromEntries(ALERT_KINDS.map((k) => [k, RuleInput.optional()])) as Record<AlertKind, z.ZodOptional<typeof RuleInput>>).strict();

export function mergeRules(base: AlertRules, changes: z.output<typeof RulesInput>): AlertRules {
  const out = { ...base };
  for (const k of ALERT_KINDS) {
    const c = changes[k];
    if (c) out[k] = { ...base[k], ...c };
    if (k !== 'faces_too_poor') delete out[k].threshold;
  }
  return out;
}

/** Stored rules over the defaults (a rule added later gets its default). */
export function withDefaults(stored: Partial<AlertRules> | undefined): AlertRules {
  return Object.fromEntries(ALERT_KINDS.map((k) => [k, { ...DEFAULT_RULES[k], ...stored?.[k] }])) as AlertRules;
}
