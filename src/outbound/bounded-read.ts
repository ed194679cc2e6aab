// What Parley's outbound HTTP calls (HTTP tools, webhook deliveries) share: reading an answer's body up to a
// bound, and naming why a connection failed without naming the address it tried.

/** Reads at most `limit` bytes of `body`; past them the body is destroyed (the connection dropped), `over` set. */
export async function readBounded(
  body: AsyncIterable<Buffer> & { destroy(): void },
  limit: number,
): Promise<{ bytes: Buffer; over: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size + chunk.length > limit) {
      chunks.push(chunk.subarray(0, limit - size));
      body.destroy();
      return { bytes: Buffer.concat(chunks), over: true };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { bytes: Buffer.concat(chunks), over: false };
}

/** The code of a network failure (ECONNREFUSED, …), else its name. */
export function errorCode(err: unknown): string {
  const code = err instanceof Error && 'code' in err ? err.code : undefined;
  if (typeof code === 'string') return code;
  // A connection tried on several addresses fails with an AggregateError, whose parts carry the codes.
  if (err instanceof AggregateError && err.errors.length > 0) return errorCode(err.errors[0]);
  return err instanceof Error ? err.name : 'unknown_error';
}
