// The user's idleness, for the inactivity steps: both delays count from the user's last activity (typing,
// sending, a click in the widget); the warning fires once per idle stretch, then the final step. Paused while a
// reply is being received, so that a slow agent never counts against the user. Inactivity reads the delays
// from the element's attributes and runs the steps in order.
export interface IdleSteps {
  warningMs: number | null;
  finalMs: number | null;
  onWarning: () => void;
  onFinal: () => void;
}

export class IdleTimer {
  #steps: IdleSteps;
  #timers: ReturnType<typeof setTimeout>[] = [];

  constructor(steps: IdleSteps) {
    this.#steps = steps;
  }

  /** The user did something (or a reply just ended): start counting again. */
  restart(): void {
    this.stop();
    const { warningMs, finalMs, onWarning, onFinal } = this.#steps;
    if (warningMs !== null && (finalMs === null || warningMs < finalMs)) {
      this.#timers.push(setTimeout(onWarning, warningMs));
    }
    if (finalMs !== null) this.#timers.push(setTimeout(onFinal, finalMs));
  }

  stop(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers = [];
  }
}

/** The longest delay setTimeout keeps: a longer one would fire at once. About 24.8 days. */
const MAX_DELAY_MS = 2 ** 31 - 1;

const seconds = (value: string | null): number | null => {
  const n = value === null ? Number.NaN : Number(value);
  return Number.isFinite(n) && n > 0 ? Math.min(n * 1000, MAX_DELAY_MS) : null;
};

/**
 * The inactivity steps as the element's `inactivity-warning-after` and `inactivity-final-after` set them (in
 * seconds), run by `run` one at a time, in order: a slow warning is never overtaken by the final step.
 */
export class Inactivity {
  readonly #el: Element;
  readonly #run: (step: 'warning' | 'final') => Promise<void>;
  #timer: IdleTimer;
  #steps: Promise<void> = Promise.resolve();

  constructor(el: Element, run: (step: 'warning' | 'final') => Promise<void>) {
    this.#el = el;
    this.#run = run;
    this.#timer = this.#timerOf();
  }

  /** Reads the attributes again (stopped until restarted). */
  reread(): void {
    this.#timer.stop();
    this.#timer = this.#timerOf();
  }

  restart(): void {
    this.#timer.restart();
  }

  stop(): void {
    this.#timer.stop();
  }

  #timerOf(): IdleTimer {
    return new IdleTimer({
      warningMs: seconds(this.#el.getAttribute('inactivity-warning-after')),
      finalMs: seconds(this.#el.getAttribute('inactivity-final-after')),
      onWarning: () => void this.#step('warning'),
      onFinal: () => void this.#step('final'),
    });
  }

  #step(step: 'warning' | 'final'): Promise<void> {
    this.#steps = this.#steps.then(() => this.#run(step));
    return this.#steps;
  }
}
