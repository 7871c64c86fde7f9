import { databaseDialect } from './dialect.js';
import * as pg from './pg/schema.js';
import * as sqlite from './schema.js';

/**
 * The tables head office's queries are built from: SQLite's (server/db/schema.ts) or, when FOOTFALL_DATABASE_URL
 * names a PostgreSQL database, PostgreSQL's (server/db/pg/schema.ts), chosen once when the process starts
 * (docs/scale-out.md, "One code path, the dialect's tables"). Both schemas have the same table names, columns and
 * TypeScript keys (server/db/pg/schema.test.ts holds them together), so each is typed as its SQLite table and the
 * services are written once. Import tables from here; the domains' schema.ts files are their SQLite definitions.
 */
const onPostgres = databaseDialect() === 'postgres';
const pick = <T>(sqliteTable: T, pgTable: unknown): T => (onPostgres ? (pgTable as T) : sqliteTable);

export const alertDeliveries = pick(sqlite.alertDeliveries, pg.alertDeliveries);
export const alertSettings = pick(sqlite.alertSettings, pg.alertSettings);
export const alerts = pick(sqlite.alerts, pg.alerts);
export const auditLog = pick(sqlite.auditLog, pg.auditLog);
export const businesses = pick(sqlite.businesses, pg.businesses);
export const cameraChecks = pick(sqlite.cameraChecks, pg.cameraChecks);
export const cameras = pick(sqlite.cameras, pg.cameras);
export const companies = pick(sqlite.companies, pg.companies);
export const companyPrivacy = pick(sqlite.companyPrivacy, pg.companyPrivacy);
export const crossings = pick(sqlite.crossings, pg.crossings);
export const customerConsents = pick(sqlite.customerConsents, pg.customerConsents);
export const customers = pick(sqlite.customers, pg.customers);
export const galleryClocks = pick(sqlite.galleryClocks, pg.galleryClocks);
export const doNotEnrol = pick(sqlite.doNotEnrol, pg.doNotEnrol);
export const enrolmentCodes = pick(sqlite.enrolmentCodes, pg.enrolmentCodes);
export const faceImages = pick(sqlite.faceImages, pg.faceImages);
export const footfallCounts = pick(sqlite.footfallCounts, pg.footfallCounts);
export const idpAttempts = pick(sqlite.idpAttempts, pg.idpAttempts);
export const idpCodes = pick(sqlite.idpCodes, pg.idpCodes);
export const idpLinks = pick(sqlite.idpLinks, pg.idpLinks);
export const idpRefreshTokens = pick(sqlite.idpRefreshTokens, pg.idpRefreshTokens);
export const idpRevocations = pick(sqlite.idpRevocations, pg.idpRevocations);
export const invitations = pick(sqlite.invitations, pg.invitations);
export const loginFailures = pick(sqlite.loginFailures, pg.loginFailures);
export const purchases = pick(sqlite.purchases, pg.purchases);
export const reportSubscriptions = pick(sqlite.reportSubscriptions, pg.reportSubscriptions);
export const retiredRefreshTokens = pick(sqlite.retiredRefreshTokens, pg.retiredRefreshTokens);
export const sessions = pick(sqlite.sessions, pg.sessions);
export const shops = pick(sqlite.shops, pg.shops);
export const sightings = pick(sqlite.sightings, pg.sightings);
export const users = pick(sqlite.users, pg.users);
export const visits = pick(sqlite.visits, pg.visits);
