/**
 * Why a transport request failed: the closed set of reasons a transport puts
 * on the `WorkerUnavailableError` it rejects with. A module of its own, with
 * no imports, so that errors.ts and transport.ts can both use it without an
 * import circle. Part of the transport interface (re-exported by transport.ts).
 * @module
 */

/**
 * Why a request failed without an answer, as a transport says it on the
 * `WorkerUnavailableError` it rejects with (its `reason`). Callers decide by
 * these constants, never by the error's text. A closed set: a transport that
 * cannot tell leaves `reason` undefined.
 */
export const RequestFailure = {
  /** Nobody subscribed to the subject when the request was sent: it was never delivered. */
  NoResponders: 'no-responders',
  /**
   * The request was (or may have been) delivered, and the responder's end
   * went away before it answered: its process died or closed its transport.
   * The request may have run.
   */
  ResponderLost: 'responder-lost',
} as const;

/** One of {@link RequestFailure}'s values. */
export type RequestFailureReason = (typeof RequestFailure)[keyof typeof RequestFailure];
