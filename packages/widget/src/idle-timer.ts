// The user's idleness, for the inactivity steps: both delays count from the user's last activity (typing,
// sending, a click in the widget); the warning fires once per idle stretch, then the final step. Paused while a
// reply is being received, so that a slow agent never counts against the user.
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
