/** Every table, for drizzle's typed client. Each domain owns its own schema file. */
export * from '../clients/schema.js';
export * from '../auth/schema.js';
export * from '../audit/schema.js';
export * from '../team/schema.js';
export * from '../shops/schema.js';
export * from '../cameras/schema.js';
export * from '../customers/schema.js';
export * from '../visits/schema.js';
export * from '../purchases/schema.js';
export * from '../auth-service/schema.js';
export * from '../idp/schema.js';
export * from '../crossings/schema.js';
export * from '../privacy/schema.js';
export * from '../alerts/schema.js';
export * from '../digests/schema.js';
