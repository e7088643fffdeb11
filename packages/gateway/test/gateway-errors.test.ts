/**
 * The gateway's own errors live in @tensorbus/gateway (core knows no
 * gateway), and its fault codes keep their numbers: core's codes from 1 in
 * the order they were added, the gateway's own from 100 (docs/gateway.md).
 */
import test from 'ava';
import { TensorbusError } from '@tensorbus/core';
import { FAULT_CODES, GatewayError } from '../src/index.js';

test('gateway errors - a GatewayError is a TensorbusError with its GATEWAY_ code, not retryable', (t) => {
  for (const code of ['GATEWAY_BAD_REQUEST', 'GATEWAY_LIMIT_EXCEEDED', 'GATEWAY_UNKNOWN_HANDLE', 'GATEWAY_UNAUTHORIZED'] as const) {
    const error = new GatewayError(code, 'refused');
    t.true(error instanceof TensorbusError);
    t.is(error.name, 'GatewayError');
    t.is(error.code, code);
    t.false(error.retryable);
  }
});

test('gateway errors - every fault code keeps its number (core\'s from 1, the gateway\'s 100-103), and no two codes share one', (t) => {
  t.like({ ...FAULT_CODES }, {
    RPC_TIMEOUT: 1, REMOTE_ERROR: 2, WORKER_UNAVAILABLE: 3, UNKNOWN_FUNCTION: 4, SERIALIZATION: 5, SHUTDOWN: 6,
    RREF_NOT_OWNER: 7, RREF_RELEASED: 8, RREF_CREATION_FAILED: 9, RREF_OWNER_LOST: 10,
    AUTOGRAD_CONTEXT_NOT_FOUND: 11, AUTOGRAD_BACKWARD_FAILED: 12, INVALID_ARGUMENT: 13, DUPLICATE_WORKER: 14,
    PERMISSION_DENIED: 15, RREF_LIMIT_EXCEEDED: 16, AUTOGRAD_LIMIT_EXCEEDED: 17, MISSING_PACKAGE: 18, TRANSPORT: 19,
    STREAM_LIMIT_EXCEEDED: 20, STREAM_LEASE_EXPIRED: 21, CHECKPOINT_INVALID: 22,
    GATEWAY_BAD_REQUEST: 100, GATEWAY_LIMIT_EXCEEDED: 101, GATEWAY_UNKNOWN_HANDLE: 102, GATEWAY_UNAUTHORIZED: 103,
  });
  const numbers = Object.values(FAULT_CODES);
  t.is(new Set(numbers).size, numbers.length, 'one number per code');
  for (const [code, n] of Object.entries(FAULT_CODES)) t.is(n >= 100, code.startsWith('GATEWAY_'), `${code}: the gateway's own codes, and only they, are from 100`);
});
