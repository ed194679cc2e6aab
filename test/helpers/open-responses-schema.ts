// Checks what the tests receive from the Open Responses routes against the specification's own published
// schema (vendored in test/fixtures/open-responses/openapi.json), not only against Parley's zod schemas,
// which were written from the specification and could share a misreading with the server.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';

const documentId = 'https://parley.test/open-responses/openapi.json';
const document = JSON.parse(
  readFileSync(new URL('../fixtures/open-responses/openapi.json', import.meta.url), 'utf8'),
) as { components: { schemas: Record<string, { properties?: { type?: { enum?: string[] } } }> } };

// strict: false because the document carries OpenAPI keywords (discriminator, example, x-*) that are not
// JSON Schema; the whole document is added so that its '#/components/schemas/...' references resolve.
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(document, documentId);

const validatorOf = (name: string) => {
  const validate = ajv.getSchema(`${documentId}#/components/schemas/${name}`);
  assert.ok(validate, `the specification has no component schema ${name}`);
  return validate;
};

// Each stream event type maps to the component schema whose `type` enum names it.
const eventSchemas = new Map(
  Object.entries(document.components.schemas)
    .filter(([name]) => name.endsWith('StreamingEvent'))
    .flatMap(([name, schema]) => (schema.properties?.type?.enum ?? []).map((type) => [type, name] as const)),
);

function check(name: string, value: unknown) {
  const validate = validatorOf(name);
  if (!validate(value))
    assert.fail(`not a valid ${name}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
}

/** Fails unless the value is a response object as the specification's ResponseResource schema says. */
export function assertOpenResponse(value: unknown): void {
  check('ResponseResource', value);
}

/** Fails unless the value is a stream event the specification defines, valid against its schema. */
export function assertOpenStreamEvent(event: { type: string }): void {
  const name = eventSchemas.get(event.type);
  assert.ok(name, `the specification defines no stream event ${event.type}`);
  check(name, event);
}
