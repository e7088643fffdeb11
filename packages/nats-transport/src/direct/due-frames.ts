/**
 * Frames that get no answer (a segment's give-back), held for one turn of
 * the event loop so they go in the same write as the next message on their
 * connection: one system call, and one wakeup of the peer, instead of two.
 * What no message takes goes alone at the end of the turn. See
 * docs/data-plane.md, "A give-back rides with the next message".
 * @module
 */

/** Experiment knob (`npm run bench -- --experiment riding`): `TENSORBUS_EXPERIMENT_RIDING=0` writes every give-back at once, alone. */
const RIDING = process.env.TENSORBUS_EXPERIMENT_RIDING !== '0';

/** The frames due on one connection. */
export class DueFrames {
  private frames: Buffer[] = [];

  /** `writeAlone` writes what is still due at the end of the turn (it checks the connection is still open). */
  constructor(private readonly writeAlone: (bytes: Buffer) => void) {}

  /** Holds `frame` for the next message, or for the end of this turn. */
  add(frame: Buffer): void {
    if (!RIDING) return this.writeAlone(frame);
    if (this.frames.push(frame) > 1) return;
    setImmediate(() => {
      const due = this.take();
      if (due) this.writeAlone(due);
    });
  }

  /** The frames due, as one buffer to write in front of a message, now no longer due; undefined when none are. */
  take(): Buffer | undefined {
    if (this.frames.length === 0) return undefined;
    const due = this.frames.length === 1 ? this.frames[0]! : Buffer.concat(this.frames);
    this.frames = [];
    return due;
  }
}
