/**
 * The raw TCP peer's server process: a length-prefixed echo server on a free
 * loopback port (each complete frame is sent back as it came).
 * @module
 */
import { createServer, type Socket } from 'node:net';
import { serveCommands } from '../process/child-channel.js';
import { FrameReader, writeFrame } from './tcp-framing.js';

const sockets = new Set<Socket>();
const server = createServer((socket) => {
  sockets.add(socket);
  socket.setNoDelay(true);
  const reader = new FrameReader((payload) => writeFrame(socket, payload));
  socket.on('data', (chunk: Buffer) => reader.push(chunk));
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => socket.destroy());
});
const port = await new Promise<number>((resolve) =>
  server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
);

serveCommands({}, { pid: process.pid, port }, () => {
  for (const socket of sockets) socket.destroy();
  server.close();
});
