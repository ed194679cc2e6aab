// The OpenAPI 3.1 document, generated from the zod route schemas and completed from operations.ts
// (operationIds, descriptions, response descriptions with the error codes of each status, response headers),
// with an example for every JSON body and as code generators need it (for-generators.ts), served at
// /openapi.json with a docs page at /docs.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { contentBlockDocumented } from '#schemas';
import { errorCatalogue } from '../../errors.ts';
import { VERSION } from '../../version.ts';
import { pageHeadersOnScope } from '../server/page-headers.ts';
import { describeDefaults, nameHeaders } from './for-generators.ts';
import { describeStatus, genericErrors, type OperationDoc, operationDocs } from './operations.ts';

type Json = Record<string, unknown>;
type Document = Parameters<typeof jsonSchemaTransformObject>[0];

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

const headers = {
  'X-Request-Id': {
    description: "The request's id, as in the logs and in an error body's request_id",
    required: true,
    schema: { type: 'string' },
  },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
  'Idempotent-Replayed': {
    description:
      'Present (`true`) when the answer is a replay of an earlier request with the same Idempotency-Key',
    schema: { type: 'string', enum: ['true'] },
  },
  'RateLimit-Limit': {
    description: "Requests per minute of the credential's budget",
    schema: { type: 'integer' },
  },
  'RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the window resets', schema: { type: 'integer' } },
};

const errorJson = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };

/** Every `$ref` target in `node`. */
function refsOf(node: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(node)) for (const item of node) refsOf(item, into);
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') into.add(value);
      else refsOf(value, into);
    }
  }
  return into;
}

/** Rewrites `$ref`s in place by `rename` (old target → new). */
function renameRefs(node: unknown, rename: Map<string, string>): void {
  if (Array.isArray(node)) for (const item of node) renameRefs(item, rename);
  else if (node !== null && typeof node === 'object') {
    const obj = node as Json;
    for (const [key, value] of Object.entries(obj)) {
      if (key === '$ref' && typeof value === 'string') obj[key] = rename.get(value) ?? value;
      else renameRefs(value, rename);
    }
  }
}

/**
 * Drops component schemas nothing refers to (the zod transform makes an input and an output variant of
 * each), then names a remaining `XInput` plain `X` when there is no other `X`.
 */
function pruneSchemas(doc: Json): void {
  const components = doc.components as { schemas: Record<string, unknown> };
  const schemas = components.schemas;
  const prefix = '#/components/schemas/';
  const used = new Set<string>();
  const queue = [...refsOf(doc.paths, new Set())];
  for (let target = queue.pop(); target !== undefined; target = queue.pop()) {
    const name = target.slice(prefix.length);
    if (used.has(name) || !(name in schemas)) continue;
    used.add(name);
    queue.push(...refsOf(schemas[name], new Set()));
  }
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name];
  const rename = new Map<string, string>();
  for (const name of Object.keys(schemas)) {
    const plain = name.replace(/Input$/, '');
    if (plain !== name && !(plain in schemas)) rename.set(name, plain);
  }
  components.schemas = Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [rename.get(name) ?? name, schema]),
  );
  renameRefs(doc, new Map([...rename].map(([from, to]) => [prefix + from, prefix + to])));
}

/** The JSON schema `schema` or the component it refers to. */
function resolve(schema: unknown, schemas: Record<string, unknown>): Json {
  const target = (schema as Json | undefined)?.$ref;
  const found = typeof target === 'string' ? schemas[target.split('/').pop() ?? ''] : schema;
  return (found ?? {}) as Json;
}

/**
 * A JSON body none of whose fields is required may be left out (it then counts as `{}`, server/validation.ts),
 * so the document does not require one there.
 */
function optionalBody(op: Json, schemas: Record<string, unknown>): void {
  const body = op.requestBody as { required?: boolean; content?: Record<string, { schema?: unknown }> };
  const json = body?.content?.['application/json'];
  if (!json) return;
  const required = resolve(json.schema, schemas).required;
  if (!Array.isArray(required) || required.length === 0) body.required = false;
}

/** Completes one operation from its entry in operationDocs. */
function completeOperation(op: Json, about: OperationDoc, rateLimited: boolean): void {
  op.operationId = about.id;
  op.description = about.description;
  if (about.open) op.security = [];
  const responses = (op.responses ?? {}) as Record<string, Json>;
  const statuses = new Set(about.errors.map((code) => String(errorCatalogue[code].status)));
  for (const status of Object.keys(responses)) {
    // An error status the route declares but none of whose codes the operation lists is left to `default`.
    if (/^[45]/.test(status) && status !== '422' && !statuses.has(status)) delete responses[status];
  }
  // A status the operation has lists its own codes and the generic ones of that status (a 413 upload too
  // large beside a body too large); `default` lists the generic codes of the other statuses.
  const codes = [...about.errors, ...genericErrors];
  for (const status of statuses) {
    responses[status] = {
      ...(responses[status] ?? { content: errorJson }),
      description: describeStatus(Number(status), codes),
    };
  }
  if (responses['422']) responses['422'].description = 'The request does not match its schema';
  const others = genericErrors.filter((code) => !statuses.has(String(errorCatalogue[code].status)));
  responses.default = {
    description: `Any other error: one that any operation may answer\n\n${others
      .map((code) => describeStatus(errorCatalogue[code].status, [code]))
      .join('\n')}`,
    content: errorJson,
  };
  for (const [status, response] of Object.entries(responses)) {
    if (/^[23]/.test(status)) response.description = about.ok;
    const own: Record<string, unknown> = { 'X-Request-Id': ref('X-Request-Id') };
    if (status === '429' || status === '503') own['Retry-After'] = ref('Retry-After');
    if (rateLimited && (/^2/.test(status) || status === '429')) {
      for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) own[name] = ref(name);
    }
    if (about.replays && /^2/.test(status)) own['Idempotent-Replayed'] = ref('Idempotent-Replayed');
    response.headers = { ...(response.headers as Json | undefined), ...own };
  }
  op.responses = responses;
}

/** The request's content block as a union keyed on `type` (its validation is a refinement zod cannot show). */
function documentContentBlocks(schemas: Record<string, unknown>): void {
  // anyOf, though the branches exclude each other: a linter cannot see that a `type` left out of two branches
  // still tells them apart (a text block has `text`, a file block `file_id`, and neither allows the other).
  const { $schema: _s, ...schema } = z.toJSONSchema(contentBlockDocumented, {
    io: 'input',
    target: 'draft-2020-12',
  });
  schemas.ContentBlockCreate = schema;
}

/**
 * Each event of TurnEvent as a component of its own (`turn.started` → TurnStartedEvent), the union then a
 * discriminated oneOf of references, so that a generated client has a type per event.
 */
function documentTurnEvents(schemas: Record<string, unknown>): void {
  const union = schemas.TurnEvent as { oneOf?: Json[] } | undefined;
  if (!union?.oneOf) return;
  const mapping: Record<string, string> = {};
  union.oneOf = union.oneOf.map((branch) => {
    const event = String((branch.properties as { event?: { const?: string } } | undefined)?.event?.const);
    const name = `${event.replace(/(^|[._])(\w)/g, (_m, _sep, c: string) => c.toUpperCase())}Event`;
    schemas[name] = branch;
    mapping[event] = `#/components/schemas/${name}`;
    return { $ref: mapping[event] };
  });
  Object.assign(union, { discriminator: { propertyName: 'event', mapping } });
}

/**
 * An example of `schema` made of the examples of its parts: a component's or a property's own, a constant,
 * an enum's first value, null where null is allowed, one item of an array, the required properties of an
 * object. Undefined when a part has none.
 */
function sampleOf(schema: unknown, schemas: Record<string, unknown>): unknown {
  const s = resolve(schema, schemas);
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  const branches = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (
    branches?.some((branch) => branch.type === 'null') ||
    (Array.isArray(s.type) && s.type.includes('null'))
  ) {
    return null;
  }
  if (s.type === 'array') {
    const item = sampleOf(s.items, schemas);
    return item === undefined ? undefined : [item];
  }
  if (s.type === 'object') {
    const properties = (s.properties ?? {}) as Record<string, unknown>;
    const sample: Json = {};
    for (const name of (s.required ?? []) as string[]) {
      sample[name] = sampleOf(properties[name], schemas);
      if (sample[name] === undefined) return undefined;
    }
    return sample;
  }
  return undefined;
}

/**
 * Gives each success answer in JSON an example where neither it nor its schema has one (a page of users, a
 * reply): one made of its parts' examples, so that /docs shows one for every answer.
 */
function exampleAnswers(doc: Json, schemas: Record<string, unknown>): void {
  for (const item of Object.values(doc.paths as Record<string, Record<string, Json>>)) {
    for (const op of Object.values(item)) {
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        const media = (response.content as Record<string, Json> | undefined)?.['application/json'];
        if (!/^2/.test(status) || !media || 'example' in media || 'examples' in media) continue;
        if (Array.isArray(resolve(media.schema, schemas).examples)) continue;
        const example = sampleOf(media.schema, schemas);
        if (example !== undefined) media.example = example;
      }
    }
  }
}

/** The generated document, completed: every operation must have an entry in operationDocs. */
export function completeDocument(doc: Json): Json {
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(item)) {
      const key = `${method.toUpperCase()} ${path}`;
      const about = operationDocs[key];
      if (!about) throw new Error(`No operationDocs entry for ${key} (src/http/openapi/operations.ts)`);
      completeOperation(op, about, path.startsWith('/v1/'));
    }
  }
  const components = (doc.components ?? {}) as Json;
  const schemas = (components.schemas ?? {}) as Record<string, unknown>;
  for (const item of Object.values(paths)) for (const op of Object.values(item)) optionalBody(op, schemas);
  components.headers = headers;
  doc.components = components;
  pruneSchemas(doc);
  const named = components.schemas as Record<string, unknown>;
  documentContentBlocks(named);
  documentTurnEvents(named);
  exampleAnswers(doc, named);
  nameHeaders(paths);
  describeDefaults(named);
  for (const item of Object.values(paths))
    for (const op of Object.values(item)) describeDefaults(op.requestBody);
  return doc;
}

/** Must be registered before the routes it documents. */
export async function registerOpenApi(app: FastifyInstance) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Parley',
        version: VERSION,
        description:
          'Agent-conversation runtime. Server-side family with X-API-Key; public family with a session token. Every error answers the envelope `{ error: { code, name, message, context? }, request_id, timestamp }` with a stable `code`; a 422 answers `{ detail: [{ loc, msg, type }] }`.',
      },
      servers: [{ url: '/', description: 'The server that serves this document' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          sessionToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          bearerApiKey: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key, as the OpenAI SDKs send it',
          },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: (input: Document) => completeDocument(jsonSchemaTransformObject(input) as Json),
  });
  // Swagger UI loads its scripts, stylesheets and images from /docs/static and the document from /docs/json;
  // its icons are data: URLs in its stylesheet. Its own routes and files get the page headers in this scope.
  // Its base layout leaves out the top bar, whose logo carries an inline stylesheet the policy would refuse.
  await app.register(async (scope) => {
    pageHeadersOnScope(scope, {
      'script-src': ["'self'"],
      'style-src': ["'self'"],
      'img-src': ["'self'", 'data:'],
      'connect-src': ["'self'"],
    });
    await scope.register(swaggerUi, { routePrefix: '/docs', uiConfig: { layout: 'BaseLayout' } });
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
