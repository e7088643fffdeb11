/**
 * A tab holds only its own credentials, and the server's permissions bound
 * what it may do: in a page (headless Chromium, the transport's browser
 * build over WebSocket), refused credentials and a subject the tab may not
 * publish to are told as PermissionDeniedError at once, as in Node.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import type { Transport } from '@tensorbus/core';
import { natsTransport, startNatsServer, type NatsServer } from '../src/index.js';
import { openPage, servePage, type BrowserPage, type ServedPage } from '../src/testing/browser.js';

const pageScript = fileURLToPath(new URL('./fixtures/transport-page.js', import.meta.url));
const namespace = 'tr';

// The tab may call the Node worker's subject and use its inboxes; nothing else.
const config = `authorization {
  users: [
    { user: node, password: nodepw }
    { user: tab, password: tabpw, permissions: { publish: { allow: ["tr.node.echo", "_INBOX.>"] }, subscribe: { allow: ["_INBOX.>"] } } }
  ]
}`;

let server: NatsServer;
let served: ServedPage;
let tab: BrowserPage;
let node: Transport;

test.before(async () => {
  server = await startNatsServer({ websocket: { quiet: true }, config });
  served = await servePage(pageScript);
  tab = await openPage(served.url);
  await tab.page.waitForFunction('window.tbReady === true');
  node = await natsTransport({ servers: server.url, namespace, user: 'node', pass: 'nodepw' });
  node.subscribe('node.echo', (message) => message.respond(message.data.bytes.slice()));
  node.subscribe('node.secret', (message) => message.respond(new Uint8Array([1])));
  await node.flush();
});

test.after.always(async () => {
  await tab?.close();
  await node?.close();
  await served?.close();
  await server?.stop();
});

function requestAs(user: string, pass: string, subject: string): Promise<{ outcome: string; ms: number }> {
  return tab.evaluate(`tb.requestAs(${JSON.stringify(server.wsUrl)}, ${JSON.stringify(namespace)}, ${JSON.stringify(user)}, ${JSON.stringify(pass)}, ${JSON.stringify(subject)})`);
}

test('browser trust - a tab with its own credentials calls what its permissions allow', async (t) => {
  t.like(await requestAs('tab', 'tabpw', 'node.echo'), { outcome: 'answered' });
});

test('browser trust - refused credentials are a PermissionDeniedError in a page, as in Node', async (t) => {
  t.like(await requestAs('tab', 'wrong', 'node.echo'), { outcome: 'PermissionDeniedError PERMISSION_DENIED' });
});

test('browser trust - a subject the tab may not publish to fails at once with PermissionDeniedError, not by timeout', async (t) => {
  const { outcome, ms } = await requestAs('tab', 'tabpw', 'node.secret');
  t.is(outcome, 'PermissionDeniedError PERMISSION_DENIED');
  t.true(ms < 5_000, `took ${ms} ms`);
});
