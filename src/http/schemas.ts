// Zod schemas shared by every resource: paging, free-form JSON objects with size and depth limits, the
// error envelope and the 422 body. Each resource's own are in its schema module (user-, file-, session-,
// message- and conversation-schemas.ts).
import { z } from 'zod';
import { NUL_MESSAGE, NUL_TYPE, nulPaths } from './validation.ts';

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
      const bytes = Buffer.byteLength(JSON.stringify(value));
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
  return z.string().refine((s) => !/\p{Cs}/u.test(s), {
    message: 'Input should be well-formed Unicode (no lone surrogates)',
    params: { type: 'string_unicode' },
  });
}

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
