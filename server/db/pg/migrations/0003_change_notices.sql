-- The read cache's change notices (server/db/pg/changes.ts, docs/scale-out.md "The read cache on PostgreSQL"): every
-- statement that writes a table a cached answer may read announces it on the channel footfall_changes. PostgreSQL
-- delivers a notification only when its transaction commits, and identical ones of one transaction as one, so a
-- transaction costs one notification however many statements it runs. Every process LISTENs and drops its cached
-- answers on each. Not announced (nothing cached reads them, and requests write them all the time): audit_log (a
-- photo-link row per poll), sessions and retired_refresh_tokens (sign-ins, refreshes, a session's last-used time;
-- the access-token lookups are not cached on PostgreSQL). A new table gets the trigger in its own migration
-- (server/db/pg/changes.test.ts fails until it has, or is named there as not read by any cached answer).
CREATE OR REPLACE FUNCTION footfall_note_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('footfall_changes', '');
  RETURN NULL;
END
$$;--> statement-breakpoint
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY[
    'alert_deliveries', 'alert_settings', 'alerts', 'businesses', 'camera_checks', 'cameras', 'companies',
    'company_privacy', 'crossings', 'customer_consents', 'customers', 'do_not_enrol', 'enrolment_codes', 'face_images',
    'footfall_counts', 'gallery_clocks', 'idp_attempts', 'idp_codes', 'idp_links', 'idp_refresh_tokens',
    'idp_revocations', 'invitations', 'login_failures', 'purchases', 'report_subscriptions', 'shops', 'sightings',
    'users', 'visits'
  ] LOOP
    EXECUTE format(
      'CREATE TRIGGER footfall_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION footfall_note_change()',
      t);
  END LOOP;
END
$$;
