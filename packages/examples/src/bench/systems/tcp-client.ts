/**
 * The raw TCP peer's client process: round trips of length-prefixed frames
 * of each size to the echo server at `--port` over one connection (the floor
 * for any socket transport in Node), and frames per second with a window in
 * flight (answers come back in order, so a queue matches them).
 * @module
 */
import { connect } from 'node:net';
import { argValue } from '../process/child-channel.js';
import { serveEchoClient } from './echo-client.js';
import { FrameReader, writeFrame } from './tcp-framing.js';

const socket = connect(Number(argValue('--port')), '127.0.0.1');
socket.setNoDelay(true);
await new Promise<void>((resolve, reject) => {
  socket.once('connect', resolve);
  socket.once('error', reject);
});
const waiting: Array<(payload: Buffer) => void> = [];
const reader = new FrameReader((payload) => waiting.shift()!(payload));
socket.on('data', (chunk: Buffer) => reader.push(chunk));

function echo(payload: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    writeFrame(socket, payload);
  });
}

serveEchoClient(echo, () => socket.destroy());
