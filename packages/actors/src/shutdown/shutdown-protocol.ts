/**
 * Graceful shutdown's messages (see barrier.ts).
 * @module
 */

/** Control kind: "what is your shutdown status?", answered signed over the asker's nonce. */
export const SHUTDOWN_STATUS = 'sdstatus';

/**
 * Control kind, one-way: "I have asked to shut down", sent by a worker of a
 * static group to every live member as it enters the barrier, so members
 * waiting for it poll again at once instead of at their next slow round.
 * No fields: the sender is the envelope's, shown by its MAC.
 */
export const SHUTDOWN_ASKED = 'sdasked';

/** The control kinds the shutdown plugin declares. */
export const SHUTDOWN_CONTROL_KINDS = [SHUTDOWN_STATUS, SHUTDOWN_ASKED] as const;
