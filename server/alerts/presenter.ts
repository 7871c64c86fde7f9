import type { AlertRow, Settings } from './service.js';

export interface AlertView {
  alert: AlertRow;
  shopName: string;
  shopSlug: string;
  cameraId: string | null;
  cameraLabel: string | null;
}

const KIND_TITLES: Record<string, string> = {
  shop_offline: 'Shop PC offline',
  camera_down: 'Camera down',
  door_not_counting: 'Door not counting',
  occupancy_over_limit: 'Over the occupancy limit',
  faces_too_poor: 'Faces too poor',
};

/** The Alert object (GET /api/alerts rows, webhook payloads). */
export function presentAlert(v: AlertView) {
  const a = v.alert;
  return {
    id: a.id,
    kind: a.kind,
    title: KIND_TITLES[a.kind] ?? a.kind,
    message: a.message,
    site_id: a.shopId,
    site: v.shopName,
    site_slug: v.shopSlug,
    camera: a.cameraUuid ? { id: a.cameraUuid, camera_id: v.cameraId, label: v.cameraLabel } : null,
    open: a.clearedAt === null,
    raised_at: a.raisedAt,
    cleared_at: a.clearedAt,
  };
}

/** The webhook's JSON body. */
export function alertPayload(event: 'raised' | 'cleared', v: AlertView) {
  return { event: `alert.${event}`, company_id: v.alert.companyId, alert: presentAlert(v) };
}

/** The e-mail for one raising or clearing. */
export function alertEmail(event: 'raised' | 'cleared', v: AlertView): { subject: string; text: string } {
  const title = KIND_TITLES[v.alert.kind] ?? v.alert.kind;
  const subject = event === 'raised' ? `[Footfall] ${title}: ${v.shopName}` : `[Footfall] Resolved: ${title.toLowerCase()} at ${v.shopName}`;
  const lines =
    event === 'raised'
      ? [v.alert.message, '', `Raised at ${v.alert.raisedAt} (UTC).`, 'You will get one more e-mail when it is resolved.']
      : [`Resolved: ${v.alert.message}`, '', `Raised at ${v.alert.raisedAt}, resolved at ${v.alert.clearedAt} (UTC).`];
  return { subject, text: lines.join('\n') + '\n\n-- \nFootfall head office. Alert rules and recipients: console, Alerts.\n' };
}

/** GET/PUT /api/alerts/settings; the webhook secret is never shown, only whether one is set. */
export function presentSettings(s: Settings, defaultRecipients: string[]) {
  return {
    rules: s.rules,
    email_to: s.emailTo,
    email_recipients: s.emailTo ?? defaultRecipients,
    webhook_url: s.webhookUrl,
    webhook_secret_set: s.webhookSecret !== null,
    updated_at: s.updatedAt,
  };
}
