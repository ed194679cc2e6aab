// One turn as the AI SDK's UI message chunks (the chat routes, chat.ts): text in parts per step, tool calls as
// dynamic tool parts where the caller sees them, and calls waiting for a decision as approval requests.
import type { FinishReason, UIMessageChunk } from 'ai';
import type { TurnObserver } from '../../actors/operation-context.ts';
import type { Approval } from '../../actors/step-approvals.ts';
import type { AppError } from '../../errors.ts';
import { approvalChunks, deniedChunk } from './chat-approvals.ts';
import { streamedError } from './events.ts';

/** Chunks queued before the reader must take some; beyond, text is held and merged (as SseStream does). */
const HIGH_WATER_CHUNKS = 64;

/**
 * One turn as UI message chunks, a ReadableStream the SDK's helpers frame as SSE. A slow reader gets the text
 * merged into fewer, larger deltas: memory stays within the reply's size. Steps follow Parley's step loop as
 * far as the observer shows it: text after a step's tool results opens the next step, in a new text part.
 */
export class TurnChunks {
  readonly stream: ReadableStream<UIMessageChunk>;
  readonly #showTools: boolean;
  #controller: ReadableStreamDefaultController<UIMessageChunk> | undefined;
  #closed = false;
  /** The open text part, if any, and how many were opened. */
  #textId: string | null = null;
  #texts = 0;
  /** Whether tool results were told in this step: what comes next belongs to the next one. */
  #stepDone = false;
  /** Text held back while the reader is behind. */
  #held = '';
  /** Whether any text went out (a failure then leaves the client text that was not stored). */
  #textSent = false;
  /** Calls shown whatever the caller sees of tools: those it was asked to decide, and decided. */
  readonly #shown = new Set<string>();

  constructor(showTools: boolean) {
    this.#showTools = showTools;
    this.stream = new ReadableStream<UIMessageChunk>(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        pull: () => this.#flush(),
        cancel: () => {
          this.#closed = true;
        },
      },
      new CountQueuingStrategy({ highWaterMark: HIGH_WATER_CHUNKS }),
    );
  }

  /** Starts the message; `step` false goes on with the step the client holds (a decision's stream). */
  start(messageId: string | null, metadata: Record<string, unknown>, step = true): void {
    this.#push({ type: 'start', ...(messageId ? { messageId } : {}), messageMetadata: metadata });
    if (step) this.#push({ type: 'start-step' });
  }

  text(text: string): void {
    if (text === '') return;
    this.#nextStepIfDone();
    if (this.#textId === null) {
      this.#texts += 1;
      this.#textId = `text-${this.#texts}`;
      this.#push({ type: 'text-start', id: this.#textId });
    }
    this.#textSent = true;
    this.#held += text;
    if ((this.#controller?.desiredSize ?? 0) > 0) this.#flush();
  }

  toolStarted(call: Parameters<NonNullable<TurnObserver['toolStarted']>>[0]): void {
    if (!this.#showTools) return;
    this.#nextStepIfDone();
    this.#endText();
    this.#push({
      type: 'tool-input-available',
      toolCallId: call.call_id,
      toolName: call.name,
      input: call.input,
      // The client knows none of Parley's tools: they are the SDK's dynamic tools (MCP's are too).
      dynamic: true,
    });
  }

  /** A call waiting for the caller's decision, told where a tool call would be started. */
  approvalRequested(approval: Approval): void {
    this.#nextStepIfDone();
    this.#endText();
    this.#shown.add(approval.call_id);
    for (const chunk of approvalChunks(approval)) this.#push(chunk);
  }

  /**
   * The calls a request decided: their results are told from now on (an approved call's when it ran), a
   * denied one's at once; what comes next belongs to the next step.
   */
  decided(decisions: readonly { call_id: string; approved: boolean }[]): void {
    for (const { call_id, approved } of decisions) {
      this.#shown.add(call_id);
      if (!approved) this.#push(deniedChunk(call_id));
    }
    this.#stepDone = true;
  }

  /** Opens a step now, whatever comes next. */
  nextStep(): void {
    this.#stepDone = true;
    this.#nextStepIfDone();
  }

  toolCompleted(call: Parameters<NonNullable<TurnObserver['toolCompleted']>>[0]): void {
    if (!this.#showTools && !this.#shown.has(call.call_id)) return;
    this.#stepDone = true;
    this.#push(
      call.status === 'ok'
        ? { type: 'tool-output-available', toolCallId: call.call_id, output: call.output, dynamic: true }
        : {
            type: 'tool-output-error',
            toolCallId: call.call_id,
            errorText: typeof call.output === 'string' ? call.output : JSON.stringify(call.output),
            dynamic: true,
          },
    );
  }

  finish(finishReason: FinishReason, metadata: Record<string, unknown>): void {
    this.#endText();
    this.#push({ type: 'finish-step' });
    this.#push({ type: 'finish', finishReason, messageMetadata: metadata });
    this.#close();
  }

  /** Ends the stream with `error`: its details as the message's metadata, then the error chunk. */
  fail(error: AppError): void {
    this.#flush();
    this.#push({
      type: 'message-metadata',
      messageMetadata: {
        error: streamedError(error),
        // Text was sent that is not stored: the client must discard it.
        partial: this.#textSent,
      },
    });
    this.#push({ type: 'error', errorText: error.message });
    this.#close();
  }

  #nextStepIfDone(): void {
    if (!this.#stepDone) return;
    this.#stepDone = false;
    this.#endText();
    this.#push({ type: 'finish-step' });
    this.#push({ type: 'start-step' });
  }

  #endText(): void {
    this.#flush();
    if (this.#textId === null) return;
    this.#push({ type: 'text-end', id: this.#textId });
    this.#textId = null;
  }

  #flush(): void {
    if (this.#held === '' || this.#textId === null) return;
    const delta = this.#held;
    this.#held = '';
    this.#push({ type: 'text-delta', id: this.#textId, delta });
  }

  #push(chunk: UIMessageChunk): void {
    if (this.#closed) return;
    this.#controller?.enqueue(chunk);
  }

  #close(): void {
    this.#flush();
    if (this.#closed) return;
    this.#closed = true;
    this.#controller?.close();
  }
}
