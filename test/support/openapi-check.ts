import { createRequire } from 'node:module';

/**
 * Checks an HTTP answer against the OpenAPI document (server/openapi): the operation must list the status (a
 * success status explicitly; an error may fall to `default`), the content type must be one it documents, and a
 * JSON body must match its schema. The harness runs every answer its `request` gets through this, so the API
 * tests double as the document's test (docs/api.md).
 *
 * ajv 8 is the JSON Schema 2020-12 validator OpenAPI 3.1 needs. The package's top-level `ajv` is 6 (eslint's),
 * so ajv 8 is taken from where @seriousme/openapi-schema-validator (a dev dependency) has it, with ajv-formats
 * as that validator itself loads them (docs/decisions.md).
 */
const fromValidator = createRequire(createRequire(import.meta.url).resolve('@seriousme/openapi-schema-validator'));
type ValidateFunction = ((data: unknown) => boolean) & { errors?: unknown[] | null };
type AjvClass = new (opts: Record<string, unknown>) => {
  addSchema(schema: object, key: string): unknown;
  getSchema(ref: string): ValidateFunction | undefined;
};
const Ajv2020 = (fromValidator('ajv/dist/2020.js') as { default: AjvClass }).default;
const addFormats = (fromValidator('ajv-formats') as { default: (ajv: unknown) => void }).default;

type Json = Record<string, unknown>;

/** Formats zod writes beside a `pattern` that already says the same (startsWith, endsWith, includes). */
const ZOD_FORMATS = { starts_with: true, ends_with: true, includes: true };

export class OpenApiMismatch extends Error {}

export interface ResponseChecker {
  /** Throws OpenApiMismatch when the answer is not what the document says; returns quietly for undocumented paths. */
  check(answer: { method: string; path: string; status: number; contentType: string; body: unknown }): void;
  /** Checks one server-sent event of a GET stream against the operation's `x-events` (its name, and its JSON data). */
  checkEvent(stream: { path: string; event: string; data: string }): void;
}

/** ajv's errors with what they name (`/0/tuning must NOT have additional properties: extra`). */
function describe(errors: unknown[] | null | undefined): string {
  return (errors ?? [])
    .slice(0, 8)
    .map((e) => {
      const { instancePath, message, params } = e as { instancePath: string; message?: string; params?: Record<string, unknown> };
      const what = params?.additionalProperty ?? params?.missingProperty ?? params?.allowedValues ?? params?.format;
      return `${instancePath || 'body'} ${message ?? 'is invalid'}${what === undefined ? '' : `: ${JSON.stringify(what)}`}`;
    })
    .join('; ');
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export function responseChecker(doc: Json): ResponseChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true, formats: ZOD_FORMATS });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  // Literal paths first (/api/team/members before /api/team/{id}), then fewer parameters.
  const templates = Object.keys(paths)
    .map((p) => ({ path: p, params: (p.match(/\{/g) ?? []).length, re: new RegExp('^' + p.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]+') + '$') }))
    .sort((a, b) => a.params - b.params);
  const compiled = new Map<string, ValidateFunction>();
  const validatorAt = (ref: string, where: string) => {
    let validate = compiled.get(ref);
    if (!validate) {
      validate = ajv.getSchema(ref);
      if (!validate) throw new OpenApiMismatch(`${where}: no schema at ${ref}`);
      compiled.set(ref, validate);
    }
    return validate;
  };
  const operationOf = (m: string, plain: string) => {
    const found = templates.find((t) => t.re.test(plain) && paths[t.path]![m]);
    return found ? { path: found.path, op: paths[found.path]![m] as { responses: Record<string, Json> } } : undefined;
  };

  return {
    check({ method, path, status, contentType, body }) {
      const m = method.toLowerCase();
      if (m === 'head' || m === 'options') return;
      const plain = path.split('?')[0]!;
      const found = operationOf(m, plain);
      if (!found) return;
      const op = found.op;
      const where = `${method} ${plain} (${found.path}) answered ${status}`;
      const key = op.responses[String(status)] ? String(status) : status >= 400 && op.responses.default ? 'default' : undefined;
      if (!key) throw new OpenApiMismatch(`${where}: the document lists no ${status} for this operation (${Object.keys(op.responses).join(', ')})`);
      const content = op.responses[key]!.content as Record<string, Json> | undefined;
      const media = contentType.split(';')[0]!.trim().toLowerCase();
      const empty = body === undefined || body === '' || body === null;
      if (!content) {
        if (!empty) throw new OpenApiMismatch(`${where} with a ${media || 'typeless'} body, but the document says it has none`);
        return;
      }
      if (!content[media]) throw new OpenApiMismatch(`${where} with ${media || 'no content type'}; the document says ${Object.keys(content).join(' or ')}`);
      if (media !== 'application/json') return;
      const validate = validatorAt(`openapi.json#/${pointer('paths', found.path, m, 'responses', key, 'content', media, 'schema')}`, where);
      if (!validate(body)) {
        throw new OpenApiMismatch(`${where}: the body does not match the documented schema: ${describe(validate.errors)}\nbody: ${JSON.stringify(body).slice(0, 600)}`);
      }
    },

    checkEvent({ path, event, data }) {
      const plain = path.split('?')[0]!;
      const found = operationOf('get', plain);
      const where = `GET ${plain} sent event "${event}"`;
      const stream = found?.op.responses['200']?.content as Record<string, Json> | undefined;
      const events = (stream?.['text/event-stream']?.['x-events'] ?? undefined) as { event: string; data?: Json }[] | undefined;
      if (!found || !events) throw new OpenApiMismatch(`${where}, but the document describes no event stream there`);
      const i = events.findIndex((e) => e.event === event);
      if (i < 0) throw new OpenApiMismatch(`${where}; the document lists ${events.map((e) => e.event).join(', ')}`);
      if (!events[i]!.data) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(data);
      } catch {
        throw new OpenApiMismatch(`${where} whose data is not JSON: ${data.slice(0, 200)}`);
      }
      const validate = validatorAt(`openapi.json#/${pointer('paths', found.path, 'get', 'responses', '200', 'content', 'text/event-stream', 'x-events', String(i), 'data')}`, where);
      if (!validate(parsed)) throw new OpenApiMismatch(`${where}: its data does not match the documented schema: ${describe(validate.errors)}\ndata: ${data.slice(0, 600)}`);
    },
  };
}
