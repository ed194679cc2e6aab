// The admission of turns by the bytes they hold (docs/internals/decisions.md#resident-memory): a turn reserves
// its estimate (turn-estimate.ts) against the process's one bound before it reads its history and files, and
// gives it back when it is done. One that does not fit waits in a bounded queue, first come first served;
// past the queue's bound, or after waiting its longest, it is refused with 503 server_busy and Retry-After,
// before anything is stored. One tenant's turns hold at most a share of the bound and of the queue, so that
// a tenant's burst leaves room for the others.
import { AppError, serviceUnavailable } from '../errors.ts';
import type { ResidentBytes } from '../resident-bytes.ts';
import type { ActorMetrics } from './actor-metrics.ts';

/** What a refused turn is told to wait before trying again. */
export const BUSY_RETRY_AFTER_SECONDS = 2;

export interface AdmissionOptions {
  resident: ResidentBytes;
  /** The share of the bound, and of the queue, one tenant's turns may hold (0 to 1). */
  tenantShare: number;
  /** The most turns waiting for room in this process. */
  maxWaiting: number;
  /** The longest a turn waits for room. */
  maxWaitMs: number;
  metrics?: Pick<
    ActorMetrics,
    'admissionWaiting' | 'admissionReserved' | 'admissionRefused' | 'admissionWait'
  >;
}

/** Why a turn was refused (the `reason` label of parley_admission_refused_total). */
type Refusal = 'queue_full' | 'tenant_queue_full' | 'waited_too_long';

interface Waiter {
  tenantId: string;
  bytes: number;
  since: number;
  grant(reservation: Reservation): void;
  refuse(error: AppError): void;
  timer: NodeJS.Timeout;
}

/** Bytes a turn holds against the bound, until released; resized as the turn learns what it holds. */
export class Reservation {
  #bytes: number;
  readonly #change: (delta: number) => void;

  constructor(bytes: number, change: (delta: number) => void) {
    this.#bytes = bytes;
    this.#change = change;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Holds `bytes` from now on: less gives room to waiting turns at once; more is counted, never waited for. */
  resize(bytes: number): void {
    const delta = bytes - this.#bytes;
    if (delta === 0) return;
    this.#bytes = bytes;
    this.#change(delta);
  }

  release(): void {
    this.resize(0);
  }
}

export class Admission {
  readonly #o: AdmissionOptions;
  /** In arrival order. */
  readonly #queue: Waiter[] = [];
  /** Each tenant's reserved bytes, while it has any. */
  readonly #tenants = new Map<string, number>();
  #closed = false;

  constructor(options: AdmissionOptions) {
    this.#o = options;
  }

  /** The most one tenant's turns may reserve: a turn estimated above it counts as much, and runs alone. */
  get tenantCap(): number {
    return Math.floor(this.#o.resident.maxBytes * this.#o.tenantShare);
  }

  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * A reservation of `bytes` for a turn of `tenantId`, at once if it fits and no earlier turn waits ahead of
   * it, else once it does (first come first served; a turn held back by its tenant's share holds back only
   * its tenant's later turns). Throws 503 server_busy when the queue has no room for it or it waited its
   * longest, 503 service_unavailable when the process is stopping.
   */
  async admit(tenantId: string, bytes: number): Promise<Reservation> {
    if (this.#closed) throw stopping();
    const wanted = Math.max(0, Math.min(bytes, this.tenantCap));
    const ahead = this.#queue.some((w) => w.tenantId === tenantId || !this.#withinBound(w.bytes));
    if (!ahead && this.#fits(tenantId, wanted)) return this.#grant(tenantId, wanted, 0);
    const tenantWaiting = this.#queue.filter((w) => w.tenantId === tenantId).length;
    if (this.#queue.length >= this.#o.maxWaiting) throw this.#refusal('queue_full');
    if (tenantWaiting >= Math.max(1, Math.floor(this.#o.maxWaiting * this.#o.tenantShare))) {
      throw this.#refusal('tenant_queue_full');
    }
    return new Promise<Reservation>((grant, refuse) => {
      const waiter: Waiter = {
        tenantId,
        bytes: wanted,
        since: performance.now(),
        grant,
        refuse,
        timer: setTimeout(() => {
          this.#remove(waiter);
          refuse(this.#refusal('waited_too_long'));
          // The turns it held back by being first may fit now.
          this.#drain();
        }, this.#o.maxWaitMs),
      };
      this.#queue.push(waiter);
      this.#counted();
    });
  }

  /** Refuses every waiting turn and every later one: the process is stopping. */
  close(): void {
    this.#closed = true;
    for (const waiter of this.#queue.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.refuse(stopping());
    }
    this.#counted();
  }

  #withinBound(bytes: number): boolean {
    return this.#o.resident.reserved + bytes <= this.#o.resident.maxBytes;
  }

  #fits(tenantId: string, bytes: number): boolean {
    return this.#withinBound(bytes) && (this.#tenants.get(tenantId) ?? 0) + bytes <= this.tenantCap;
  }

  #grant(tenantId: string, bytes: number, waitedMs: number): Reservation {
    this.#o.metrics?.admissionWait.observe(waitedMs / 1000);
    const reservation = new Reservation(0, (delta) => this.#change(tenantId, delta));
    reservation.resize(bytes);
    return reservation;
  }

  #change(tenantId: string, delta: number): void {
    const held = (this.#tenants.get(tenantId) ?? 0) + delta;
    if (held > 0) this.#tenants.set(tenantId, held);
    else this.#tenants.delete(tenantId);
    this.#o.resident.reserve(delta);
    this.#o.metrics?.admissionReserved.set(this.#o.resident.reserved);
    if (delta < 0) this.#drain();
  }

  /**
   * Admits the waiting turns that fit, in order: one the bound holds back holds back every turn behind it;
   * one its tenant's share holds back holds back only its tenant's.
   */
  #drain(): void {
    const heldBack = new Set<string>();
    for (const waiter of [...this.#queue]) {
      if (heldBack.has(waiter.tenantId)) continue;
      if (!this.#withinBound(waiter.bytes)) break;
      if (!this.#fits(waiter.tenantId, waiter.bytes)) {
        heldBack.add(waiter.tenantId);
        continue;
      }
      this.#remove(waiter);
      waiter.grant(this.#grant(waiter.tenantId, waiter.bytes, performance.now() - waiter.since));
    }
  }

  #remove(waiter: Waiter): void {
    const at = this.#queue.indexOf(waiter);
    if (at < 0) return;
    this.#queue.splice(at, 1);
    clearTimeout(waiter.timer);
    this.#counted();
  }

  #counted(): void {
    this.#o.metrics?.admissionWaiting.set(this.#queue.length);
  }

  #refusal(reason: Refusal): AppError {
    this.#o.metrics?.admissionRefused.inc({ reason });
    return new AppError('server_busy', undefined, {
      headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) },
      context: { reason },
    });
  }
}

const stopping = () => serviceUnavailable('The service is shutting down.');
