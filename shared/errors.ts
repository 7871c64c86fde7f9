import { z } from 'zod';

/**
 * Every failure of every head-office route: `{ error, message }`. Branch on `error` (stable); show `message` to a
 * person and never match on it. Some errors carry extra fields, so the schema lets them through.
 */
export const ErrorEnvelope = z.looseObject({
  error: z.string(),
  message: z.string(),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

/** The codes a shop PC can meet on /api/agent/* and what to do about each. */
export const AGENT_ERRORS = {
  invalid_request: '400: fix the request (the message names the field); do not retry as is',
  unauthorized: '401: the token is missing, unknown or revoked (re-enrolment, shop deleted); stop and ask for a new enrolment code',
  invalid_code: '404 on enrolment: the code is unknown, expired or already used; ask for a new one',
  not_found: '404: that camera or check is not this shop\'s (removed?); pull the camera list again',
  conflict: '409: the check is no longer open (answered, timed out or replaced); drop it',
  payload_too_large: '413: the upload is over the limit in LIMITS',
  unsupported_media_type: '415: send the image as Content-Type: image/jpeg',
  images_disabled: '501: this deployment stores no face images; stop uploading them and send visits without face_image_id',
  no_encryption_key: '503: head office cannot read its key; retry later (an operator must fix the server)',
  internal: '500: retry with backoff',
} as const;
export type AgentErrorCode = keyof typeof AGENT_ERRORS;
