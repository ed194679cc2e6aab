// Zod schemas shared by every resource: paging, free-form JSON objects with size and depth limits, text that
// can be stored as written, the error envelope and the 422 body. Each resource's own are in its module
// (users.ts, files.ts, sessions.ts, messages.ts, conversations.ts, webhooks.ts).
import { z } from 'zod';

type NulPath = (string | number)[];
/** A node's way back to the root, so that a path is only built for what is found (deep input stays linear). */
type Trail = { key: string | number; up: Trail | null } | null;

const pathOf = (trail: Trail): NulPath => {
  const path: NulPath = [];
  for (let t = trail; t !== null; t = t.up) path.unshift(t.key);
  return path;
};

/** The refusal of text with U+0000 (PostgreSQL cannot store it), one issue per location. */
export const NUL_TYPE = 'string_nul';
export const NUL_MESSAGE = 'Input should not contain the NUL character (U+0000)';

/** A hostile body cannot make the 422 much larger than itself. */
export const MAX_NUL_PATHS = 20;

/**
 * The locations of strings (values and keys) holding U+0000 in parsed JSON or in a query, path or
 * header record (never a multipart body: its parts hold streams), walked iteratively so that depth
 * cannot overflow the stack.
 */
export function nulPaths(value: unknown): NulPath[] {
  const found: NulPath[] = [];
  const stack: [unknown, Trail][] = [[value, null]];
  for (let top = stack.pop(); top !== undefined && found.length < MAX_NUL_PATHS; top = stack.pop()) {
    const [node, trail] = top;
    if (typeof node === 'string') {
      if (node.includes('\0')) found.push(pathOf(trail));
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], { key: i, up: trail }]);
    } else if (node !== null && typeof node === 'object') {
      for (const [key, child] of Object.entries(node).reverse()) {
        if (key.includes('\0')) found.push(pathOf({ key, up: trail }));
        else stack.push([child, { key, up: trail }]);
      }
    }
  }
  return found;
}

export const KiB = 1024;

/** JSON nested deeper than this inside metadata/context/info is refused (a recursive serializer must never meet it). */
export const MAX_JSON_DEPTH = 32;

/** Depth of a parsed JSON value, walked iteratively so hostile input cannot overflow the stack. */
function jsonDepthExceeds(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [node, depth] = top;
    if (node === null || typeof node !== 'object') continue;
    if (depth + 1 > limit) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The UTF-8 length of a string, as Buffer.byteLength counts it (a lone surrogate as the 3 bytes of U+FFFD),
 * without Node's Buffer: the schemas also type browser code.
 */
export function utf8Length(s: string): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** A free-form JSON object (metadata, context, info) of at most `maxBytes` as JSON and MAX_JSON_DEPTH levels. */
export function jsonObject(maxBytes: number) {
  return z
    .record(z.string(), z.unknown())
    .superRefine((value, ctx) => {
      if (jsonDepthExceeds(value, MAX_JSON_DEPTH)) {
        ctx.addIssue({
          code: 'custom',
          message: `Nested deeper than ${MAX_JSON_DEPTH} levels`,
          params: { type: 'too_deep' },
        });
        return;
      }
      // A JSON body was refused at parsing; this is for JSON met elsewhere (an upload's metadata part).
      for (const path of nulPaths(value)) {
        ctx.addIssue({ code: 'custom', path, message: NUL_MESSAGE, params: { type: NUL_TYPE } });
      }
      const bytes = utf8Length(JSON.stringify(value));
      if (bytes > maxBytes) {
        ctx.addIssue({
          code: 'custom',
          message: `At most ${maxBytes} bytes as JSON (got ${bytes})`,
          params: { type: 'too_large' },
        });
      }
    })
    .meta({
      description: `Free-form JSON object, at most ${maxBytes} bytes and ${MAX_JSON_DEPTH} levels deep`,
    });
}

export const metadataSchema = jsonObject(8 * KiB);

/**
 * A string that is well-formed Unicode. A lone surrogate cannot be stored as UTF-8: it would read
 * back as U+FFFD, so the write would answer something other than what is stored. Refused as 422.
 */
export function text() {
  return z.string().check(wellFormed);
}

/** The check of text(), for a string schema of another kind (a URL). */
export const wellFormed = z.refine<string>((s) => !/\p{Cs}/u.test(s), {
  message: 'Input should be well-formed Unicode (no lone surrogates)',
  params: { type: 'string_unicode' },
});

/** An ISO 8601 instant as the service writes it. */
export const timestamp = z.string().meta({ format: 'date-time' });

/** An ISO 8601 date-time with or without an offset, in a query (the store compares it as an instant). */
export const dateTimeQuery = z.iso.datetime({ offset: true });

export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
};

export function pageOf<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), next_offset: z.number().int().nullable() });
}

export const errorEnvelope = z
  .object({
    error: z.object({
      code: z.string(),
      name: z.string(),
      message: z.string(),
      context: z.record(z.string(), z.unknown()).optional(),
    }),
    request_id: z.string().nullable(),
    timestamp: z.string().nullable(),
  })
  .meta({ id: 'Error' });

export const validationErrorBody = z
  .object({
    detail: z.array(
      z.object({
        loc: z.array(z.union([z.string(), z.number()])),
        msg: z.string(),
        type: z.string(),
      }),
    ),
  })
  .meta({ id: 'ValidationError' });

/** Error responses that every authenticated route (API key or session token) may give, for the OpenAPI document. */
export const authErrors = {
  401: errorEnvelope,
  403: errorEnvelope,
  404: errorEnvelope,
  422: validationErrorBody,
  429: errorEnvelope,
} as const;
