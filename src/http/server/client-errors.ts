// Answers what Node reports before a request reaches Fastify (a request not received in time, bytes
// that are not HTTP) with the error envelope, then closes the connection.
import type { Socket } from 'node:net';
import { customAlphabet } from 'nanoid';
import { AppError, type ErrorCode } from '../../errors.ts';

const requestIdSuffix = customAlphabet('0123456789abcdefghijklmnopqrstuvwxyz', 16);
/** The id of a request that came with none acceptable of its own. */
export const newRequestId = () => `req_${requestIdSuffix()}`;

/** Node's codes for what it could not read, and ours; anything else is bad_request. */
const clientErrorCodes: Record<string, ErrorCode> = {
  ERR_HTTP_REQUEST_TIMEOUT: 'request_timeout',
  // Fastify's own handler answered 431 here; keep it, in the envelope.
  HPE_HEADER_OVERFLOW: 'headers_too_large',
};
const reasons: Partial<Record<ErrorCode, string>> = {
  request_timeout: 'Request Timeout',
  headers_too_large: 'Request Header Fields Too Large',
};

export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code: ErrorCode = clientErrorCodes[error.code ?? ''] ?? 'bad_request';
  const answer = new AppError(code);
  const body = JSON.stringify({
    error: { code: answer.code, name: answer.errorName, message: answer.message },
    request_id: newRequestId(),
    timestamp: new Date().toISOString(),
  });
  // A reply already under way on this connection (an event stream, say) must not get these bytes spliced
  // into it: Node's own handler checks the same private field.
  const reply = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (socket.writable && reply?.headersSent !== true) {
    socket.write(
      `HTTP/1.1 ${answer.statusCode} ${reasons[code] ?? 'Bad Request'}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
