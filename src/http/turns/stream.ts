// A turn as a stream of events (docs/internals/decisions.md#streaming): turn.started once the user's message
// is stored, message.delta as the model writes, message.completed once the reply is stored, then
// turn.completed (or turn.cancelled); or turn.failed. Tool events (`tool.started`, `tool.completed`) are sent
// only where the caller sees tool calls; a turn whose calls wait for decisions tells their approval requests
// and ends with turn.awaiting_approval. The turn's log is listed in LiveTurns while it runs, so that a
// dropped client can resume it (resume.ts) from any event. A decision's stream is the same turn going on: it
// starts after the pause it decided (`startAfter`). A send while people handle the session tells the stored
// message (message.created) and ends.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { TurnObserver } from '../../actors/operation-context.ts';
import type { MessageView, PublicMessage } from '../../actors/public-message.ts';
import type { SendResult } from '../../actors/session-service.ts';
import { AppError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { countOpenStream } from '../server/metrics.ts';
import { asAppError, type TurnEventsOptions, TurnEventWriter } from './events.ts';
import type { LiveTurns, TurnLog, Visibility } from './log.ts';
import { storedTurn } from './replay.ts';
import { SSE_HEADERS, SseStream } from './sse.ts';

export interface TurnStreamOptions<R extends SendResult = SendResult> extends Visibility {
  sessionId: string;
  /** Runs the send with the observer this stream provides. */
  run(observer: TurnObserver): Promise<R>;
  store: Store;
  turns: LiveTurns;
  log: FastifyBaseLogger;
  pingMs?: number;
  /** How the family shows the turn's messages (the public family without their metadata). */
  view: MessageView;
  /**
   * The seq after which the stream starts: null (the default) from turn.started; a decision's stream after
   * the pause it decided. Given the log it answers with, and the result when nothing ran now.
   */
  startAfter?(log: TurnLog, result: R | null): number | null;
  /** Answers with the log in another protocol (the Open Responses events); default Parley's own events. */
  answer?(reply: FastifyReply, log: TurnLog, after: number | null, replayed: boolean): FastifyReply;
}

/**
 * Starts the turn and answers once its first event exists. Errors before that reject (the route answers
 * them as JSON); errors after it end the stream with turn.failed. The turn does not depend on the
 * client: if it goes away, the reply is still completed and stored.
 */
export function streamTurn<R extends SendResult>(
  reply: FastifyReply,
  options: TurnStreamOptions<R>,
): Promise<FastifyReply> {
  const { sessionId, turns, store } = options;
  const live = turns.open(sessionId, (turnId) =>
    storedTurn(store, { sessionId, turnId, sessionStatus: 'active', open: true }),
  );
  return new Promise<FastifyReply>((resolve, reject) => {
    let answered = false;
    const answer = (log: TurnLog, replayed: boolean, result: R | null) => {
      answered = true;
      const after = options.startAfter?.(log, result) ?? null;
      resolve(
        options.answer
          ? options.answer(reply, log, after, replayed)
          : answerWithLog(reply, log, { ...options, after }, replayed),
      );
    };
    live.follow(() => {
      if (!answered && live.hasStarted) answer(live, false, null);
    });

    options.run(live).then(
      async (result) => {
        const paused = result.approvals !== null;
        if (answered) return turns.finish(live, paused ? { paused } : { ok: result });
        if (result.user_message && result.handled_by === 'humans')
          return resolve(answerForHumans(reply, result.turn_id, result.user_message, options));
        // Nothing ran now (a replay, a join of the same request still running, a turn still paused): tell
        // the stored turn.
        let stored: TurnLog | null;
        try {
          stored = await storedTurn(store, {
            sessionId,
            turnId: result.turn_id,
            sessionStatus: result.session_status,
            result,
            paused,
          });
        } catch (err) {
          return reject(err);
        }
        if (!stored) return reject(new AppError('internal_error', `Turn ${result.turn_id} is not stored.`));
        answer(stored, result.replayed, result);
      },
      (err: unknown) => {
        if (!answered) return reject(err);
        const error = asAppError(err);
        // Logged like a plain send's failure: with the upstream status and message a provider error carries.
        if (error.statusCode >= 500) options.log.error({ err: error }, 'streamed turn failed');
        turns.finish(live, { error });
      },
    );
  });
}

/**
 * The stream of a send while people handle the session (docs/guides/humans.md): the stored message as
 * message.created, and its end; no model answers.
 */
function answerForHumans(
  reply: FastifyReply,
  turnId: string,
  message: PublicMessage,
  options: Pick<TurnStreamOptions, 'view' | 'pingMs' | 'sessionId'>,
): FastifyReply {
  const sse = new SseStream(options.pingMs);
  sse.send('message.created', `${turnId}:0`, {
    turn_id: turnId,
    session_id: options.sessionId,
    message: options.view(message),
  });
  sse.close();
  reply.code(200).headers(SSE_HEADERS);
  countOpenStream(reply, 'sse');
  return reply.send(sse);
}

/** Answers with `log`'s events after `options.after`, following the log while it changes. */
export function answerWithLog(
  reply: FastifyReply,
  log: TurnLog,
  options: TurnEventsOptions & { pingMs?: number | undefined },
  replayed = false,
): FastifyReply {
  const sse = new SseStream(options.pingMs);
  const writer = new TurnEventWriter(log, sse, options);
  const pump = () => writer.pump();
  const unfollow = log.follow(pump);
  // A slow reader gets the text merged into fewer, larger deltas: memory stays within the reply's size.
  sse.onDemand = pump;
  sse.once('close', unfollow);
  // A resumed turn that has nothing new yet still answers at once, and keeps the connection alive meanwhile.
  if (options.after !== null) sse.comment('resumed');
  pump();
  reply.code(200).headers(SSE_HEADERS);
  countOpenStream(reply, 'sse');
  if (replayed) reply.header('idempotent-replayed', 'true');
  return reply.send(sse);
}
