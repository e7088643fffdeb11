/**
 * Graceful shutdown's messages (see barrier.ts).
 * @module
 */

/** Control kind: "what is your shutdown status?", answered signed over the asker's nonce. */
export const SHUTDOWN_STATUS = 'sdstatus';

/** The control kinds the shutdown plugin declares. */
export const SHUTDOWN_CONTROL_KINDS = [SHUTDOWN_STATUS] as const;
