import { agentDocs } from '../agent-api/openapi.js';
import { alertsDocs } from '../alerts/openapi.js';
import { digestsDocs } from '../digests/openapi.js';
import { assistantDocs } from '../assistant/openapi.js';
import { auditDocs } from '../audit/openapi.js';
import { privacyDocs } from '../privacy/openapi.js';
import { authServiceDocs } from '../auth-service/openapi.js';
import { authDocs } from '../auth/openapi.js';
import { camerasDocs } from '../cameras/openapi.js';
import { consoleDocs } from '../console/openapi.js';
import { clientsDocs } from '../clients/openapi.js';
import { customersDocs } from '../customers/openapi.js';
import { idpDocs } from '../idp/openapi.js';
import { metricsDocs } from '../metrics/openapi.js';
import { purchasesDocs } from '../purchases/openapi.js';
import { reportsDocs } from '../reports/openapi.js';
import { shopsDocs } from '../shops/openapi.js';
import { teamDocs } from '../team/openapi.js';
import { visitsDocs } from '../visits/openapi.js';
import { mergeDocs } from './document.js';
import { ownDocs } from './own.js';
import type { RouteDocs } from './registry.js';

/**
 * Every domain's route docs. A new domain adds its `server/<domain>/openapi.ts` here; a new route of a known
 * domain is one entry in that file (docs/api.md, "Registering a route").
 */
export const domainDocs: RouteDocs[] = [
  ownDocs,
  consoleDocs,
  metricsDocs,
  authDocs,
  teamDocs,
  clientsDocs,
  shopsDocs,
  camerasDocs,
  agentDocs,
  visitsDocs,
  customersDocs,
  purchasesDocs,
  reportsDocs,
  alertsDocs,
  digestsDocs,
  assistantDocs,
  authServiceDocs,
  idpDocs,
  auditDocs,
  privacyDocs,
];

let merged: RouteDocs | undefined;
export function allDocs(): RouteDocs {
  return (merged ??= mergeDocs(domainDocs));
}
