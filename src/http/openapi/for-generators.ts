// What code generators (openapi-typescript, openapi-fetch) need from the document: request headers named as
// clients write them, and request fields with a default optional in the types they generate.
type Json = Record<string, unknown>;

/**
 * How clients write the headers the routes declare. Fastify hands headers to validation lower-cased, so the
 * routes declare them so (and a 422 locates them so: `["header","idempotency-key"]`); the document names them
 * as HTTP does, which a typed client's `headers: { 'Idempotency-Key': … }` must match.
 */
const headerSpelling: Record<string, string> = {
  'idempotency-key': 'Idempotency-Key',
  'last-event-id': 'Last-Event-ID',
};

/** `idempotency-key` → `Idempotency-Key`, for a header the table does not list. */
const titleCase = (name: string) =>
  name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

/** Renames every header parameter of every operation to its written form. */
export function nameHeaders(paths: Record<string, Record<string, Json>>): void {
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item)) {
      for (const parameter of (op.parameters ?? []) as Json[]) {
        if (parameter.in !== 'header' || typeof parameter.name !== 'string') continue;
        parameter.name = headerSpelling[parameter.name] ?? titleCase(parameter.name);
      }
    }
  }
}

/**
 * A field that a request may leave out and that then takes a default (`role`, `persist`) keeps its default
 * in its description rather than in `default`: openapi-typescript makes a field with a `default` required in
 * the type of a component (it reads `default` as "always present", true of answers), so a generated client
 * would have to send it. An answer's defaulted fields are listed as required anyway, so only requests change.
 */
export function describeDefaults(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) describeDefaults(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const schema = node as Json;
  const properties = schema.properties as Record<string, Json> | undefined;
  if (properties && typeof properties === 'object') {
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    for (const [name, property] of Object.entries(properties)) {
      if (required.has(name) || !property || typeof property !== 'object' || !('default' in property))
        continue;
      const { default: value, ...rest } = property;
      const said = `Default: \`${JSON.stringify(value)}\`.`;
      properties[name] = {
        ...rest,
        description: typeof rest.description === 'string' ? `${rest.description} ${said}` : said,
      };
    }
  }
  for (const value of Object.values(schema)) describeDefaults(value);
}
