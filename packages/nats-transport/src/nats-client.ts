/**
 * The NATS client functions the transport uses: in Node, the `nats` package
 * (TCP). package.json `browser` maps this file to nats-client.browser.ts
 * (`@nats-io/nats-core`, WebSocket), which has the same functions and types.
 * @module
 */
export { connect, createInbox, credsAuthenticator, headers, nkeyAuthenticator } from 'nats';
