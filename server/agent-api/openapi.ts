import { AgentIdentity, CameraList, CameraStateResult, CheckAnswered, ClaimResult, EnrolResponse, FaceStored, LiveDemands, LiveFrameResult, SnapshotStored } from '../../shared/agent-api.js';
import { routeDocs } from '../openapi/registry.js';

/** The shop-PC routes: their payloads are the wire contracts of shared/agent-api.ts (docs/agent-protocol.md). */
const jpeg = (what: string) => ({ media: { type: 'image/jpeg', description: what } });
const camera = { camera: 'Camera uuid or camera_id of the calling shop' };
const noKey = '`no_encryption_key`: the server key is missing';

export const agentDocs = routeDocs({
  'POST /api/agent/enrol': {
    summary: 'Enrol a shop PC with its installation code',
    description: 'Spends the single-use code: returns this PC’s token and a fresh broker secret. Any earlier PC of the shop is cut off.',
    security: [],
    responses: { 201: { description: 'Enrolled', json: EnrolResponse }, 404: '`invalid_code`: unknown, expired or spent', 503: noKey },
  },
  'GET /api/agent/me': { summary: 'Who this shop PC is', responses: { 200: { description: 'Its shop, broker login (no password) and timing', json: AgentIdentity } } },
  'GET /api/agent/cameras': {
    summary: 'The camera list, tombstones included',
    responses: { 200: { description: 'Cameras with their passwords in clear, and removed ones', json: CameraList }, 503: noKey },
  },
  'POST /api/agent/cameras/state': { summary: 'Report whether each camera’s stream opens', responses: { 200: { description: 'Recorded', json: CameraStateResult } } },
  'PUT /api/agent/cameras/{camera}/snapshot': {
    summary: 'Upload a camera picture',
    params: camera,
    request: jpeg('The picture'),
    responses: { 200: { description: 'Stored', json: SnapshotStored }, 400: 'Not a JPEG', 413: 'Too large', 415: 'Not image/jpeg' },
  },
  'POST /api/agent/faces': {
    summary: 'Upload a face image before the visit that names it',
    request: jpeg('The face'),
    responses: { 201: { description: 'Stored', json: FaceStored }, 400: 'Not a JPEG', 413: 'Too large', 415: 'Not image/jpeg', 501: '`images_disabled`: this deployment stores no face images' },
  },
  'POST /api/agent/checks/claim': { summary: 'Claim the oldest open camera check', responses: { 200: { description: 'The job, or `job` null', json: ClaimResult } } },
  'POST /api/agent/checks/{check}/answer': {
    summary: 'Answer a camera check',
    params: { check: 'Check id' },
    responses: { 200: { description: 'Recorded', json: CheckAnswered }, 409: 'The check was already answered or released' },
  },
  'GET /api/agent/live': { summary: 'Cameras someone watches now', description: 'The polling twin of the MQTT live demand.', responses: { 200: { description: 'Live demands', json: LiveDemands } } },
  'POST /api/agent/live/{camera}/frames': {
    summary: 'Upload a live frame',
    params: camera,
    request: jpeg('A frame, 640 pixels wide'),
    responses: { 200: { description: 'Whether anyone still watches (stop when false)', json: LiveFrameResult }, 400: 'Not a JPEG', 413: 'Too large', 415: 'Not image/jpeg' },
  },
});
