// What stops a running turn (docs/internals/decisions.md#cancel): each operation gets a signal for its model
// calls, aborted when its turn is cancelled or the process stops, and registers the turn it runs on its
// session's entry, where a cancel finds it. Tool calls in flight are not aborted by a cancel: they finish and
// their results are stored, so that a call that took effect is never left without its result.
import type { OperationContext } from './operation-context.ts';
import type { SessionEntry } from './resident-actors.ts';

type TurnControl = Pick<OperationContext, 'turnSignal' | 'cancelled' | 'runsTurn'> & { done(): void };

export class TurnControls {
  /** The controllers of the operations running now that have asked for a signal. */
  readonly #live = new Set<AbortController>();
  #stopping: unknown;

  /** The turn parts of an operation's context on `entry`; `done` once the operation has ended. */
  open(entry: SessionEntry): TurnControl {
    let controller: AbortController | undefined;
    let cancelled = false;
    let turnId: string | null = null;
    const live = this.#live;
    const stopping = () => this.#stopping;
    return {
      // Made on first use: an operation that calls no model needs none.
      get turnSignal() {
        if (!controller) {
          controller = new AbortController();
          live.add(controller);
          if (cancelled) controller.abort(new Error('cancelled'));
          else if (stopping() !== undefined) controller.abort(stopping());
        }
        return controller.signal;
      },
      cancelled: () => cancelled,
      runsTurn(id) {
        turnId = id;
        entry.running = {
          turnId: id,
          cancel() {
            cancelled = true;
            controller?.abort(new Error('cancelled'));
          },
        };
      },
      done() {
        if (controller) live.delete(controller);
        if (turnId !== null && entry.running?.turnId === turnId) entry.running = undefined;
      },
    };
  }

  /** Cancels turn `turnId` of the entry if an operation runs it now; whether one did. */
  cancel(entry: SessionEntry, turnId: string): boolean {
    if (entry.running?.turnId !== turnId) return false;
    entry.running.cancel();
    return true;
  }

  /** The process stops: every model call in flight, and every one to come, is aborted. */
  abortAll(reason: unknown): void {
    this.#stopping = reason;
    for (const controller of this.#live) controller.abort(reason);
  }
}
