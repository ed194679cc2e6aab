// Request routing between processes: any process accepts any request; one for a session whose shard
// another process owns is forwarded there (undici, pooled) before its body is read, and the owner's answer
// (JSON, a file, an event stream) is relayed as it arrives. A client that goes away aborts the forward.
// Which routes act on a session is what each declares in its Fastify config (http/server/route-config.ts).
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Agent } from 'undici';
import { AppError, shardMoving } from '../errors.ts';
import { SHARD_COUNT, shardOf } from '../shards.ts';
import { propagatedHeaders } from '../tracing/tracer.ts';
import type { ClusterMetrics } from './cluster-metrics.ts';
import type { Coordinator, Route } from './coordinator.ts';

export const HOP_HEADER = 'x-parley-hop';
export const NODE_HEADER = 'x-parley-node';

/**
 * How long a request waits for a shard without an owner before 503
 * (docs/internals/architecture.md#forwarding).
 */
const OWNER_WAIT_MS = 2000;
const OWNER_POLL_MS = 50;

// Hop-by-hop headers belong to one connection, not to the request or answer being relayed; the request's
// host and length are the forward's own.
const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade']);
const notForwarded = new Set([...hopByHop, 'host', 'content-length']);

export interface ForwardingOptions {
  coordinator: Coordinator;
  metrics: ClusterMetrics;
  /** The largest request body, as for the process's own routes. */
  bodyLimit: number;
  /** Whether answers carry NODE_HEADER: host and PID are for an operator who asks, not for every client. */
  nodeHeader: boolean;
}

export function registerForwarding(app: FastifyInstance, options: ForwardingOptions): void {
  const { coordinator, metrics } = options;
  // With tracing on, the forward carries its own trace headers (its client span's): the client's are not copied.
  for (const name of propagatedHeaders()) notForwarded.add(name);
  // Turns answer when their reply is stored (up to the model's 60 s), and streams ping every 15 s.
  const agent = new Agent({ connections: 256, headersTimeout: 120_000, bodyTimeout: 120_000 });
  app.addHook('onClose', async () => agent.close());

  app.addHook('onRequest', async (request, reply) => {
    if (options.nodeHeader) reply.header(NODE_HEADER, coordinator.nodeId);
    const shard = shardOfRequest(request, coordinator);
    if (shard !== null) await serveAtOwner(request, reply, shard, undefined);
  });

  // A route naming its session in the body is routed once the body is parsed, and forwarded as JSON again.
  app.addHook('preValidation', async (request, reply) => {
    const id = request.routeOptions.config.sessionOfBody?.(request.body);
    if (typeof id === 'string' && id !== '') {
      await serveAtOwner(request, reply, shardOf(id), Buffer.from(JSON.stringify(request.body)));
    }
  });

  /**
   * Relays the request to the owner of `shard`, unless this process owns it. `read`: the body when it was
   * already read (and so can still be served here), undefined when it is unread.
   */
  async function serveAtOwner(
    request: FastifyRequest,
    reply: FastifyReply,
    shard: number,
    read: Buffer | undefined,
  ) {
    let route = coordinator.route(shard);
    if (route.kind === 'local') return;
    // A peer sent it here believing this process owns the shard: it does not, so the peer asks again.
    if (request.headers[HOP_HEADER]) throw new AppError('shard_not_owned');

    const replayable = !String(request.headers['content-type'] ?? '').startsWith('multipart/');
    let body: Buffer | null | IncomingMessage | typeof CLIENT_GONE | undefined = read;
    let misdirectedBy: string | undefined;
    const deadline = Date.now() + OWNER_WAIT_MS;
    for (;;) {
      if (route.kind === 'local') {
        // Unread (or kept), the request is served here after all; once forwarded unread, its body is gone.
        if (body === undefined || read !== undefined) return;
        throw shardMoving({ shard });
      }
      // No owner yet, or only the one that just said it is not: wait for the new owner, up to the deadline.
      if (route.kind === 'none' || route.node === misdirectedBy) {
        if (Date.now() >= deadline) throw shardMoving({ shard });
        await sleep(OWNER_POLL_MS);
        if (reply.raw.destroyed) return abandon(reply, metrics);
        route = await coordinator.refresh(shard);
        continue;
      }
      body ??= replayable ? await readBody(request.raw, options.bodyLimit) : request.raw;
      if (body === CLIENT_GONE) return abandon(reply, metrics);
      const forwarded = await forward(agent, request, reply, route, body, metrics);
      if (forwarded === CLIENT_GONE) return abandon(reply, metrics);
      if (forwarded) return;
      // The owner changed under way (421): one more try, with a body that can be sent again.
      if (!replayable || misdirectedBy !== undefined) throw shardMoving({ shard });
      misdirectedBy = route.node;
      route = await coordinator.refresh(shard);
    }
  }
}

/** The shard a request must be served in, or null when any process can serve it. */
function shardOfRequest(request: FastifyRequest, coordinator: Coordinator): number | null {
  const { session, sessionOf, createsSession } = request.routeOptions.config;
  const params = request.params;
  if ((session || sessionOf) && params && typeof params === 'object') {
    const id: unknown = sessionOf
      ? sessionOf(params as Record<string, string>)
      : Reflect.get(params, session ?? '');
    if (typeof id === 'string' && id !== '') return shardOf(id);
  }
  // A route that creates a session is served where it arrives, with an id in a shard this process owns;
  // one that owns no shard yet (just started, or draining) passes it to a process that does.
  if (createsSession && coordinator.servedShards().length === 0)
    return Math.floor(Math.random() * SHARD_COUNT);
  return null;
}

/** The client went away before its answer: nobody is left to answer, and nothing went wrong here. */
const CLIENT_GONE = Symbol('client gone');

function abandon(reply: FastifyReply, metrics: ClusterMetrics): void {
  metrics.forwards.inc({ outcome: 'client_gone' });
  // Hijacked, the request ends here: no handler runs and no error answer is written to a closed socket.
  reply.hijack();
}

/**
 * The whole body (null when empty), or CLIENT_GONE when the client went away before sending all of it.
 * Collected from 'data' events: async iteration of the request costs an async generator, end-of-stream
 * watchers and a promise per chunk, a measurable share of a forward.
 */
function readBody(raw: IncomingMessage, limit: number): Promise<Buffer | null | typeof CLIENT_GONE> {
  return new Promise((resolve, reject) => {
    // As Fastify's own body parser: a 413 closes the connection, since the client may still be sending.
    const tooLarge = () =>
      reject(
        new AppError('payload_too_large', undefined, {
          headers: { connection: 'close' },
          context: { limit_bytes: limit },
        }),
      );
    if (Number(raw.headers['content-length']) > limit) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      raw.off('data', onData).off('end', onEnd);
      tooLarge();
    };
    const onEnd = () => resolve(size === 0 ? null : Buffer.concat(chunks, size));
    // A client that goes away mid-body: the request errors (ECONNRESET), or at least closes before its end.
    const gone = () => resolve(CLIENT_GONE);
    const onClose = () => {
      if (!raw.complete) gone();
    };
    raw.on('data', onData).on('end', onEnd).on('error', gone).on('close', onClose);
  });
}

/**
 * Sends the request to the owner and relays its answer to the client as it arrives; false when the owner
 * answered 421 (its answer is dropped), CLIENT_GONE when the client left before the owner answered.
 * undici's stream() writes the answer's body straight into the response: no Readable, body collection or
 * extra promise per answer, and backpressure both ways (a slow client slows the relay, a client that goes
 * away ends the forward).
 */
async function forward(
  agent: Agent,
  request: FastifyRequest,
  reply: FastifyReply,
  route: Extract<Route, { kind: 'remote' }>,
  body: Buffer | null | IncomingMessage,
  metrics: ClusterMetrics,
): Promise<boolean | typeof CLIENT_GONE> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined && !notForwarded.has(name)) headers[name] = value;
  }
  headers[HOP_HEADER] = '1';
  // The owner logs and answers under the same request id.
  headers['x-request-id'] = request.id;
  headers['x-forwarded-for'] = request.ip;
  if (Buffer.isBuffer(body)) headers['content-length'] = String(body.length);
  else if (body && request.headers['content-length'])
    headers['content-length'] = request.headers['content-length'];
  // A client that goes away takes the forwarded request with it (the owner still finishes a turn). undici
  // takes any EventEmitter as the signal: one costs a few per cent of an AbortController and its listener.
  const cancel = new EventEmitter();
  let clientGone = false;
  reply.raw.once('close', () => {
    if (reply.raw.headersSent) return;
    clientGone = true;
    cancel.emit('abort');
  });
  let answered = false;
  let misdirected = false;
  try {
    await agent.stream(
      {
        origin: route.url,
        path: request.raw.url ?? request.url,
        method: request.method,
        headers,
        body,
        signal: cancel,
      },
      (answer) => {
        answered = true;
        misdirected = answer.statusCode === 421;
        metrics.forwards.inc({ outcome: misdirected ? 'misdirected' : 'ok' });
        return misdirected ? discard() : relay(reply, answer.statusCode, answer.headers);
      },
    );
  } catch (err) {
    // The owner went away in the middle of its answer: undici ended the relay, and the client sees the
    // connection end, as it would have.
    if (answered) return !misdirected;
    if (clientGone) return CLIENT_GONE;
    metrics.forwards.inc({ outcome: 'unreachable' });
    // The owner is gone (killed, or paused past its lease): its shards move shortly.
    throw shardMoving({ owner: route.node }, err);
  }
  return !misdirected;
}

/** The client's response, with the owner's status and headers, for the owner's body to be written into. */
function relay(reply: FastifyReply, statusCode: number, from: IncomingHttpHeaders): Writable {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(from)) {
    if (value !== undefined && !hopByHop.has(name)) headers[name] = value;
  }
  reply.hijack();
  return reply.raw.writeHead(statusCode, headers);
}

/** Where a 421's body goes. */
const discard = () =>
  new Writable({
    write: (_chunk, _encoding, done) => done(),
  });
