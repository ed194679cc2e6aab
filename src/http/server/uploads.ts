// Multipart uploads shared by the tenant file pool and a conversation's uploads: the body schema, the 415 for
// non-multipart requests, and turning the `file` part into a checked name, type and bytes.
import multipart, { type MultipartFile, type MultipartValue } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError, ValidationError } from '../../errors.ts';
import { sniffFileType } from '../../files/sniff.ts';

/**
 * Lets the routes of `scope` (an upload route's own plugin) take multipart bodies, buffered up to
 * `uploadBytes` per file and one file per request. Registered nowhere else, so JSON routes answer 415.
 */
export async function registerUploads(scope: FastifyInstance, uploadBytes: number) {
  await scope.register(multipart, {
    attachFieldsToBody: true,
    limits: { fileSize: uploadBytes, files: 1, fields: 4, parts: 5, fieldSize: 64 * 1024 },
  });
}

const partOfType = (v: unknown, type: 'file' | 'field') =>
  typeof v === 'object' && v !== null && 'type' in v && v.type === type;
const isFilePart = (v: unknown): v is MultipartFile => partOfType(v, 'file');
const isFieldPart = (v: unknown): v is MultipartValue<unknown> => partOfType(v, 'field');

export const filePart = z
  .custom<MultipartFile>(isFilePart, 'Expected a file part')
  .meta({ type: 'string', format: 'binary', description: 'The file (one per request)' });

/** A non-file part; its value is text, or already parsed when the part declared application/json. */
export const fieldPart = z.custom<MultipartValue<unknown>>(isFieldPart, 'Expected a field, not a file');

/** onRequest guard: upload routes take multipart/form-data only (checked before the body is read). */
export async function requireMultipart(request: FastifyRequest) {
  // isMultipart() is only known once the body parser ran; the header is known now.
  const type = request.headers['content-type']?.toLowerCase() ?? '';
  if (!type.startsWith('multipart/form-data')) {
    throw new AppError(
      'unsupported_media_type',
      'Send the file as multipart/form-data with a part named "file".',
      {
        context: { expected: 'multipart/form-data' },
      },
    );
  }
}

const MAX_NAME = 255;

/**
 * The file name without any client path, control characters or lone surrogates, at most 255 UTF-16
 * units, cut between characters and keeping a short extension.
 */
export function cleanName(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? '';
  const clean = base
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .replace(/\p{Cs}/gu, '\uFFFD')
    .trim();
  if (clean.length <= MAX_NAME) return clean || 'upload';
  const dot = clean.lastIndexOf('.');
  const extension = dot > 0 && clean.length - dot <= 16 ? clean.slice(dot) : '';
  let stem = clean.slice(0, MAX_NAME - extension.length);
  if (/[\uD800-\uDBFF]$/.test(stem)) stem = stem.slice(0, -1);
  return stem + extension;
}

export interface CheckedUpload {
  name: string;
  mime_type: string;
  content: Buffer;
}

/** Reads the buffered `file` part and checks it: 422 when empty, 415 when its bytes are not an accepted type. */
export async function checkUpload(part: MultipartFile): Promise<CheckedUpload> {
  const content = await part.toBuffer();
  if (content.length === 0) throw ValidationError.at(['body', 'file'], 'The file is empty', 'value_error');
  const name = cleanName(part.filename);
  const sniffed = await sniffFileType(content, name, part.mimetype);
  if (!sniffed.ok) {
    throw new AppError('unsupported_media_type', sniffed.reason, {
      context: { declared: part.mimetype, ...(sniffed.detected ? { detected: sniffed.detected } : {}) },
    });
  }
  return { name, mime_type: sniffed.mime, content };
}
