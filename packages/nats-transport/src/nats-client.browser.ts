/**
 * The NATS client functions the transport uses, in a browser: nats.js v3's
 * `@nats-io/nats-core` over WebSocket (`wsconnect`), whose connections have
 * the API the transport uses of Node's `nats` (subscribe, publish with
 * headers, status, info), and which bundles without any Node module.
 * @module
 */
export { wsconnect as connect, createInbox, credsAuthenticator, headers, nkeyAuthenticator } from '@nats-io/nats-core';
