import { z } from 'zod';
import { announceCheck, startCheck } from '../cameras/check-request.js';
import { camerasPolicy } from '../cameras/policy.js';
import { companyCounting } from '../cameras/counting.js';
import { presentCamera, presentCheck } from '../cameras/presenter.js';
import { findShopCamera, listCameras, shopCameraStates, viewCamera } from '../cameras/service.js';
import { actorOf, tenantOf, type Ctx } from '../context.js';
import { HttpError, badRequest, notFound } from '../http/errors.js';
import { describeIssues, plainErrors } from '../http/pipeline.js';
import type { Rule } from '../policy.js';
import { cameraRef } from '../references/cameras.js';
import { resolve } from '../references/resolver.js';
import { shopRef } from '../references/shops.js';
import { checkShop } from '../shops/check.js';
import { shopsPolicy } from '../shops/policy.js';
import { presentShopCheck, presentSite } from '../shops/presenter.js';
import { reportsPolicy } from '../reports/policy.js';
import { presentFootfall } from '../reports/presenter.js';
import { BUCKETS, ReportQueryInput, resolveReportQuery } from '../reports/query.js';
import { reportPool } from '../reports/pool.js';
import { getShop, listShops } from '../shops/service.js';
import { shopsToday } from '../crossings/service.js';
import type { ToolSpec } from './llm.js';
import { allows } from './policy.js';
import { cameraForTool, checkForTool, shopForTool } from './presenter.js';

/**
 * The assistant's tools. Each stands for an HTTP route and runs as the signed-in user through that route's services,
 * presenter and policy rule: the tenant is the session's (tenantOf), references resolve inside it, and a role the rule
 * refuses gets the rule's 403 message as the tool's result. A tool's failure (bad arguments, unknown shop, a check
 * already running) is the tool's result too, `{ error, message }` as the API would answer it, for the model to relay.
 */
export interface Tool {
  name: string;
  description: string;
  /** Arguments; their JSON schema is what the model is shown. */
  args: z.ZodType;
  /** The rule of the route this tool stands for. */
  rule: Rule;
  /** The result, or a promise of it (the footfall report is counted on a report thread). */
  run(ctx: Ctx, args: never): unknown;
}

function tool<S extends z.ZodType>(t: { name: string; description: string; args: S; rule: Rule; run(ctx: Ctx, args: z.output<S>): unknown }): Tool {
  return t as Tool;
}

const site = z.string().trim().min(1).max(200);

/** The shop a tool names (slug or uuid) in the caller's company; another company's is "not found". */
async function shopNamed(ctx: Ctx, ref: string) {
  const db = ctx.deps.store.db;
  const shop = await getShop(db, await resolve(db, shopRef, tenantOf(ctx), ref, 'path'));
  if (!shop) throw notFound('That shop');
  return shop;
}

/** GET /api/sites */
const sites = tool({
  name: 'sites',
  description:
    "Lists the company's shops: name, slug, time zone, whether the shop PC is online, its cameras up and total, face quality (fraction_below_gate), visits queued or dropped, and people in the shop now (occupancy) with today's entries and exits (null where no camera has a counting line).",
  args: z.strictObject({}),
  rule: shopsPolicy.view,
  async run(ctx) {
    const now = Date.now();
    const db = ctx.deps.store.db;
    const list = await listShops(db, tenantOf(ctx));
    const today = await shopsToday(db, list, new Date(now));
    return { sites: list.map((s) => shopForTool(presentSite(s, ctx.deps.config, today.get(s.id)!, now))) };
  },
});

/** GET /api/cameras, optionally for one shop. */
const cameras = tool({
  name: 'cameras',
  description: 'Lists cameras, of one shop or of every shop: label, camera_id, whether it is connected, and its last check (state, verdict, headline).',
  args: z.strictObject({ site: site.optional().describe('The shop (slug or id); omit for every shop.') }),
  rule: camerasPolicy.view,
  async run(ctx, args) {
    const db = ctx.deps.store.db;
    const companyId = tenantOf(ctx);
    const shopId = args.site === undefined ? undefined : await resolve(db, shopRef, companyId, args.site, 'query');
    const now = Date.now();
    const views = (await listCameras(db, companyId)).filter((v) => shopId === undefined || v.shop.id === shopId);
    const { health } = await companyCounting(db, ctx.deps.config, companyId, shopId, now);
    return { cameras: views.map((v) => cameraForTool(presentCamera(v, now, health))) };
  },
});

/** GET /api/sites/{site}/check */
const siteCheck = tool({
  name: 'site_check',
  description: "Runs the shop check of one shop: five steps in order (the shop's PC is online, recognition is running, cameras are connected, cameras can recognise faces, visits are reaching head office), each pass, warn, fail or unknown, with advice.",
  args: z.strictObject({ site: site.describe('The shop (slug or id).') }),
  rule: shopsPolicy.view,
  async run(ctx, args) {
    const shop = await shopNamed(ctx, args.site);
    const cams = await shopCameraStates(ctx.deps.store.db, shop.id, (await companyCounting(ctx.deps.store.db, ctx.deps.config, shop.companyId, shop.id)).health);
    return presentShopCheck(shop, checkShop(shop, cams, ctx.deps.config));
  },
});

/** POST /api/cameras/{id}/check with kind connection. */
const cameraCheck = tool({
  name: 'camera_check',
  description:
    'Requests a connection check of one camera: the shop PC tries to open its stream and answers within seconds. It only starts the check; the result shows later in the cameras list. Only some roles may do this.',
  args: z.strictObject({
    camera: z.string().trim().min(1).max(200).describe("The camera's camera_id or id."),
    site: site.optional().describe('The shop (slug or id); needed when two shops have a camera with that camera_id.'),
  }),
  rule: camerasPolicy.check,
  async run(ctx, args) {
    const { store } = ctx.deps;
    const companyId = tenantOf(ctx);
    const { view, check } = await store.tx(async () => {
      // Inside the body: on PostgreSQL store.db is the transaction's connection only there.
      const db = store.db;
      let id: string;
      if (args.site === undefined) {
        id = await resolve(db, cameraRef, companyId, args.camera, 'path');
      } else {
        const shop = await shopNamed(ctx, args.site);
        const found = await findShopCamera(db, shop.id, args.camera);
        if (!found) throw notFound(`Camera "${args.camera}" of ${shop.name}`);
        id = found.id;
      }
      const found = await viewCamera(db, id);
      if (!found) throw notFound('That camera');
      return { view: found, check: await startCheck(ctx, found, { kind: 'connection', seconds: null, via: 'assistant' }) };
    });
    await announceCheck(ctx, view, check);
    return { camera: view.camera.label || view.camera.cameraId, camera_id: view.camera.cameraId, site: view.shop.name, check: checkForTool(presentCheck({ ...view, check })) };
  },
});

const day = z.string().trim().max(10);

/** GET /api/reports/footfall */
const footfall = tool({
  name: 'footfall',
  description:
    'The footfall report of the whole company or one shop: per bucket (hour, day, week or month) the visitors, new (first visit ever) and returning; over the window the unique people (total, not the sum of the buckets), visits (a visit is a stay: a customer seen again in the same shop within 30 minutes, by default, is the same visit), the share of faces too poor to use, the worst shop, the average and median visit length in seconds (average_dwell_s, median_dwell_s), visits per age band and gender over the window and per shop (sites; unknown is a real band: gender is sent only when measured right), and the same figures over the period of the same length just before (previous) with each one\'s change as a ratio (change: 0.12 is +12 %, null when the figure before was 0). Staff are never counted. Omitted dates give a recent window ending today.',
  args: z.strictObject({
    from: day.optional().describe('First day, YYYY-MM-DD.'),
    to: day.optional().describe('Last day, YYYY-MM-DD, inclusive.'),
    site: site.optional().describe('The shop (slug or id); omit for the whole company.'),
    tz: z.string().trim().max(64).optional().describe('IANA time zone of the days and bucket labels, e.g. Asia/Kolkata; omit for the shop’s.'),
    bucket: z.enum(BUCKETS).optional().describe('Default day.'),
  }),
  rule: reportsPolicy.view,
  async run(ctx, args) {
    const db = ctx.deps.store.db;
    const companyId = tenantOf(ctx);
    const input = ReportQueryInput.safeParse(args, { error: plainErrors });
    if (!input.success) throw badRequest(describeIssues(input.error));
    // Counted on a report thread, as GET /api/reports/footfall is: a year's report must not stall head office.
    return presentFootfall(await reportPool(ctx.deps).footfall(companyId, await resolveReportQuery(db, companyId, input.data)));
  },
});

export const tools: Tool[] = [sites, cameras, siteCheck, cameraCheck, footfall];

const byName = new Map(tools.map((t) => [t.name, t]));

export function isTool(name: string): boolean {
  return byName.has(name);
}

/** The `tools` of a Chat Completions request: each tool's arguments as JSON schema. */
export const toolSpecs: ToolSpec[] = tools.map((t) => {
  const { $schema: _drop, ...parameters } = z.toJSONSchema(t.args, { io: 'input' }) as Record<string, unknown>;
  return { type: 'function', function: { name: t.name, description: t.description, parameters } };
});

/** Tools the role may not use, with the rule's sentence saying who can (for the system prompt). */
export function refusedTools(role: Parameters<typeof allows>[1]): string[] {
  return tools.filter((t) => !allows(t.rule, role)).map((t) => t.rule.message);
}

export interface ToolOutcome {
  /** What the model reads: JSON text. */
  content: string;
  ok: boolean;
  /** The error code when not ok. */
  error?: string;
}

/** Longest tool result handed to the model; a longer one is cut with a note. */
export const MAX_TOOL_RESULT_CHARS = 24_000;

const failed = (error: string, message: string): ToolOutcome => ({ content: JSON.stringify({ error, message }), ok: false, error });

/**
 * Runs one call the model made, as the signed-in user. Never throws: refusals, bad arguments and the API's errors are
 * the result; an unexpected failure (a bug) is logged and the model told only that the tool failed.
 */
export async function runTool(ctx: Ctx, name: string, rawArgs: string): Promise<ToolOutcome> {
  const t = byName.get(name);
  if (!t) return failed('unknown_tool', `There is no tool named "${name}". The tools are: ${tools.map((x) => x.name).join(', ')}.`);
  if (!allows(t.rule, actorOf(ctx).role)) return failed('forbidden', t.rule.message);
  let json: unknown;
  try {
    json = rawArgs.trim() === '' ? {} : JSON.parse(rawArgs);
  } catch {
    return failed('invalid_arguments', 'The arguments are not valid JSON.');
  }
  // Some models send null for an argument they mean to omit.
  if (json && typeof json === 'object' && !Array.isArray(json)) json = Object.fromEntries(Object.entries(json).filter(([, v]) => v !== null));
  const parsed = t.args.safeParse(json, { error: plainErrors });
  if (!parsed.success) return failed('invalid_arguments', describeIssues(parsed.error));
  try {
    const text = JSON.stringify(await t.run(ctx, parsed.data as never));
    if (text.length <= MAX_TOOL_RESULT_CHARS) return { content: text, ok: true };
    return { content: `${text.slice(0, MAX_TOOL_RESULT_CHARS)}\n[cut: the result was too long; ask about one shop at a time]`, ok: true };
  } catch (err) {
    if (err instanceof HttpError) return failed(err.code, err.message);
    ctx.log.error({ err, tool: name }, 'assistant tool failed');
    return failed('internal', 'This tool failed on the server; the answer cannot use it.');
  }
}
