/**
 * The API reference page (/console/api-reference.html): renders GET /api/openapi.json, the document head office
 * generates from its routes (docs/api.md). A small renderer of our own: it runs under the console's CSP (scripts
 * and styles from this origin only, nothing inline) and every string goes in as text, never as markup.
 */

import { h, replace, type Child } from './dom.js';

type Json = Record<string, unknown>;
type Schema = Json & { $ref?: string; type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[] };

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

const refName = (ref: string) => ref.split('/').pop() ?? ref;
const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** A one-line type: `string (date-time)`, `array of Camera`, `"a" | "b"`, `integer ≥ 1`. */
function typeLabel(s: Schema): Child[] {
  if (s.$ref) return [h('a', { href: `#schema-${refName(s.$ref)}` }, refName(s.$ref))];
  if (s.const !== undefined) return [JSON.stringify(s.const)];
  if (Array.isArray(s.enum)) return [s.enum.map((v) => JSON.stringify(v)).join(' | ')];
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  const main = types.filter((t) => t !== 'null');
  const parts: Child[] = [];
  if (main[0] === 'array' && s.items) parts.push('array of ', ...typeLabel(s.items));
  else if (main.length) parts.push(main.join(' | '));
  else if (s.anyOf || s.oneOf) parts.push('one of');
  else parts.push('any');
  const notes: string[] = [];
  if (s.format) notes.push(str(s.format));
  if (s.contentMediaType) notes.push(str(s.contentMediaType));
  if (typeof s.minLength === 'number') notes.push(`min length ${s.minLength}`);
  if (typeof s.maxLength === 'number') notes.push(`max length ${s.maxLength}`);
  if (typeof s.minimum === 'number' && s.minimum > -1e15) notes.push(`≥ ${s.minimum}`);
  if (typeof s.maximum === 'number' && s.maximum < 1e15) notes.push(`≤ ${s.maximum}`);
  if (typeof s.minItems === 'number') notes.push(`at least ${s.minItems}`);
  if (typeof s.maxItems === 'number') notes.push(`at most ${s.maxItems}`);
  if (s.pattern) notes.push(`pattern ${str(s.pattern)}`);
  if (s.default !== undefined) notes.push(`default ${JSON.stringify(s.default)}`);
  if (notes.length) parts.push(` (${notes.join(', ')})`);
  if (types.includes('null')) parts.push(' or null');
  return parts;
}

/** A description's `code` spans (the document's Markdown backticks) as code elements, not raw backticks. */
function prose(text: string): (string | HTMLElement)[] {
  const parts = text.split('`');
  // An unmatched backtick: the text as written.
  if (parts.length % 2 === 0) return [text];
  return parts.map((part, i) => (i % 2 === 1 ? h('code', {}, part) : part)).filter((x) => x !== '');
}

/** The schema as a nested list: each property with its type, whether required, and its description. */
function schemaTree(s: Schema, depth = 0): HTMLElement | null {
  if (depth > 8 || s.$ref) return null;
  const rows: HTMLElement[] = [];
  const target = s.type === 'array' && s.items && !s.items.$ref ? s.items : s;
  for (const [name, prop] of Object.entries(target.properties ?? {})) {
    rows.push(
      h(
        'li',
        {},
        h('span', { class: 'name' }, name),
        ': ',
        h('span', { class: 'type' }, ...typeLabel(prop)),
        (target.required ?? []).includes(name) ? h('span', { class: 'req' }, ' required') : null,
        prop.description ? h('span', { class: 'desc' }, ' — ', ...prose(str(prop.description))) : null,
        schemaTree(prop, depth + 1),
      ),
    );
  }
  for (const [i, variant] of (target.anyOf ?? target.oneOf ?? []).entries()) {
    rows.push(h('li', {}, h('span', { class: 'name' }, `variant ${i + 1}`), ': ', h('span', { class: 'type' }, ...typeLabel(variant)), schemaTree(variant, depth + 1)));
  }
  return rows.length ? h('ul', { class: 'schema' }, ...rows) : null;
}

function schemaBlock(s: Schema | undefined): Child {
  if (!s) return null;
  return h('div', {}, h('div', { class: 'schema' }, h('span', { class: 'type' }, ...typeLabel(s))), s.description ? h('p', { class: 'desc muted' }, ...prose(str(s.description))) : null, schemaTree(s));
}

function contentBlock(content: Record<string, Json> | undefined): Child[] {
  return Object.entries(content ?? {}).map(([media, c]) => {
    const events = (c['x-events'] ?? []) as { event: string; description: string; data?: Schema }[];
    return h(
      'div',
      {},
      h('code', {}, media),
      schemaBlock(c.schema as Schema | undefined),
      events.length
        ? h('ul', { class: 'schema' }, ...events.map((e) => h('li', {}, h('span', { class: 'name' }, `event: ${e.event}`), h('span', { class: 'desc' }, ' — ', ...prose(e.description)), e.data ? h('div', {}, 'data: ', schemaBlock(e.data)) : null)))
        : null,
    );
  });
}

function operation(method: string, path: string, op: Json, schemes: Record<string, Json>): HTMLElement {
  const security = (op.security ?? []) as Record<string, unknown>[];
  const names = security.flatMap((s) => Object.keys(s));
  const role = str(op['x-footfall-role']);
  const access = names.length
    ? `Authorization: Bearer — ${names.map((n) => `${n}${schemes[n]?.bearerFormat ? ` (${str(schemes[n].bearerFormat)})` : ''}`).join(' or ')}${role ? `; least role: ${role}` : ''}`
    : 'No token';
  const params = (op.parameters ?? []) as Json[];
  const body = op.requestBody as Json | undefined;
  const responses = Object.entries((op.responses ?? {}) as Record<string, Json>);
  return h(
    'article',
    { class: 'op', id: `op-${str(op.operationId)}` },
    h('h3', {}, h('span', { class: `method ${method}` }, method.toUpperCase()), h('span', { class: 'path' }, path), h('span', { class: 'summary' }, ...prose(str(op.summary)))),
    h('p', { class: 'access' }, access),
    op.description ? h('p', {}, ...prose(str(op.description))) : null,
    params.length
      ? h(
          'div',
          {},
          h('h4', {}, 'Parameters'),
          h(
            'table',
            {},
            h('tbody', {}, ...params.map((p) => h('tr', {}, h('td', {}, h('code', {}, str(p.name))), h('td', {}, str(p.in), p.required ? ', required' : ''), h('td', { class: 'schema' }, ...typeLabel((p.schema ?? {}) as Schema)), h('td', {}, ...prose(str(p.description)))))),
          ),
        )
      : null,
    body ? h('div', {}, h('h4', {}, `Request body${body.required ? '' : ' (optional)'}`), body.description ? h('p', {}, ...prose(str(body.description))) : null, ...contentBlock(body.content as Record<string, Json>)) : null,
    h(
      'div',
      {},
      h('h4', {}, 'Responses'),
      ...responses.map(([status, r]) =>
        h('div', {}, h('span', { class: `status ${status.startsWith('2') ? 'ok' : 'err'}` }, status), ' ', ...prose(str(r.description)), ...contentBlock(r.content as Record<string, Json> | undefined)),
      ),
    ),
  );
}

function render(doc: Json): Child[] {
  const info = (doc.info ?? {}) as Json;
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  const components = (doc.components ?? {}) as { schemas?: Record<string, Schema>; securitySchemes?: Record<string, Json> };
  const schemes = components.securitySchemes ?? {};
  const tags = ((doc.tags ?? []) as Json[]).map((t) => str(t.name));
  const byTag = new Map<string, { method: string; path: string; op: Json }[]>(tags.map((t) => [t, []]));
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = ((op.tags ?? ['Other']) as string[])[0]!;
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push({ method, path, op });
    }
  }
  const toc = h(
    'nav',
    { class: 'toc', 'aria-label': 'Operations' },
    ...[...byTag].flatMap(([tag, ops]) => [
      h('h3', {}, tag),
      h('ul', {}, ...ops.map((o) => h('li', {}, h('a', { href: `#op-${str(o.op.operationId)}` }, h('span', { class: `method ${o.method}` }, o.method.toUpperCase()), ' ', o.path)))),
    ]),
    h('h3', {}, 'Schemas'),
    h('ul', {}, ...Object.keys(components.schemas ?? {}).map((n) => h('li', {}, h('a', { href: `#schema-${n}` }, n)))),
  );
  const sections = h(
    'div',
    {},
    ...[...byTag].map(([tag, ops]) => {
      const description = str(((doc.tags ?? []) as Json[]).find((t) => t.name === tag)?.description);
      return h('section', { class: 'tag' }, h('h2', {}, tag), description ? h('p', { class: 'muted' }, ...prose(description)) : null, ...ops.map((o) => operation(o.method, o.path, o.op, schemes)));
    }),
    h(
      'section',
      { class: 'tag' },
      h('h2', {}, 'Security schemes'),
      ...Object.entries(schemes).map(([name, s]) => h('article', { class: 'op', id: `scheme-${name}` }, h('h3', {}, h('span', { class: 'path' }, name)), h('p', {}, ...prose(str(s.description))))),
    ),
    h(
      'section',
      { class: 'tag' },
      h('h2', {}, 'Schemas'),
      ...Object.entries(components.schemas ?? {}).map(([name, s]) => h('article', { class: 'op', id: `schema-${name}` }, h('h3', {}, h('span', { class: 'path' }, name)), schemaBlock(s))),
    ),
  );
  return [h('div', { class: 'intro' }, h('h1', {}, `${str(info.title)} ${str(info.version)}`), h('p', {}, ...prose(str(info.description))), h('p', {}, h('a', { href: '/api/openapi.json' }, 'The OpenAPI 3.1 document (JSON)'))), toc, sections];
}

async function main(): Promise<void> {
  const root = document.getElementById('reference')!;
  try {
    const res = await fetch('/api/openapi.json', { headers: { Accept: 'application/json' } });
    if (!res.ok) throw new Error(`GET /api/openapi.json answered ${res.status}`);
    replace(root, ...render((await res.json()) as Json));
    if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
  } catch (err) {
    replace(root, h('p', { class: 'notice error' }, `The API reference could not be loaded: ${err instanceof Error ? err.message : String(err)}`));
  }
}

void main();
