// The session machine with recording side effects and hand-finished operations, for the machine's tests:
// `operate` starts an operation that the test finishes by hand (sending DONE, as the host does), and the
// host's answers (reject, join, rejectAll) are recorded.
import assert from 'node:assert/strict';
import { createActor } from 'xstate';
import {
  type OperationRef,
  type RejectCode,
  type SessionEvent,
  type SessionInput,
  type SessionMachine,
  sessionMachine,
} from '../../src/machines/session.ts';

export const SESSION = 'sess_1';
export const EXPIRES = 1_000_000;
export const BEFORE = EXPIRES - 1;

/** A machine with recording side effects and hand-finished operations. */
export function harness() {
  const started: string[] = [];
  /** Running operations: what finishes each (DONE to the actor that started it). */
  const pending = new Map<string, () => void>();
  const rejected: { op: string; code: RejectCode }[] = [];
  const joined: { op: string; target: string }[] = [];
  const rejectedAll: { ops: string[]; code: RejectCode }[] = [];
  const machine: SessionMachine = sessionMachine.provide({
    actions: {
      operate: ({ self }, { op }) => {
        started.push(op.id);
        pending.set(op.id, () => self.send({ type: 'DONE', opId: op.id }));
      },
      reject: (_, { op, code }) => rejected.push({ op: op.id, code }),
      join: (_, { op, target }) => joined.push({ op: op.id, target }),
      rejectAll: (_, { ops, code }) => rejectedAll.push({ ops: ops.map((o) => o.id), code }),
    },
  });
  const finish = (id: string) => {
    const done = pending.get(id);
    assert.ok(done, `operation ${id} is not running`);
    pending.delete(id);
    done();
  };
  return {
    machine,
    started,
    rejected,
    joined,
    rejectedAll,
    start(input: Partial<SessionInput> = {}) {
      return createActor(machine, { input: { sessionId: SESSION, expiresAt: EXPIRES, ...input } }).start();
    },
    /** The operation succeeded: the host answered its callers and sends DONE. */
    async resolve(id: string) {
      finish(id);
      await flush();
    },
    /** The operation failed: to the machine the same as success, DONE. */
    async fail(id: string) {
      finish(id);
      await flush();
    },
  };
}

/** Lets pending microtasks run, as between two of the host's events. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

export function op(id: string, extra: Partial<OperationRef> = {}): OperationRef {
  return { id, kind: 'send', ...extra };
}

export function submit(o: OperationRef, at = BEFORE): SessionEvent {
  return { type: 'SUBMIT', op: o, at };
}
